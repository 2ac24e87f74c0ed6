// The study page's world map: an equirectangular SVG with pan, zoom and one guess marker.
// User units are degrees (x = longitude, y = -latitude). The viewBox always has the element's own
// aspect ratio, so the element's box is exactly the extent in data-bounds (west,south,east,north):
// a test, or anyone, can turn a pixel into a longitude and latitude.
"use strict";

(function () {
  var SVG = "http://www.w3.org/2000/svg";
  var MIN_SPAN = 4;       // degrees of longitude across the element at the deepest zoom
  var MAX_SPAN = 400;

  function el(name, attrs) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    return node;
  }

  function WorldMap(svg) {
    this.svg = svg;
    this.overlay = svg.querySelector("#overlay");
    this.center = [0, 0];    // lon, lat
    this.span = 360;         // degrees of longitude across the element
    this.marker = null;
    this.guess = null;
    this.enabled = true;
    this.listeners = [];
    this.drawGraticule();
    this.bind();
    this.fit();
  }

  WorldMap.prototype.size = function () {
    var r = this.svg.getBoundingClientRect();
    return [Math.max(r.width, 1), Math.max(r.height, 1)];
  };

  WorldMap.prototype.fit = function () {
    var s = this.size();
    // the whole world: 360 degrees wide and at least 180 high (the element is 2:1 in the CSS)
    this.center = [0, 0];
    this.span = Math.min(MAX_SPAN, Math.max(360, 180 * s[0] / s[1]));
    this.render();
  };

  WorldMap.prototype.bounds = function () {
    var s = this.size();
    var perPx = this.span / s[0];
    var halfW = this.span / 2, halfH = s[1] * perPx / 2;
    return [this.center[0] - halfW, this.center[1] - halfH, this.center[0] + halfW, this.center[1] + halfH];
  };

  WorldMap.prototype.clamp = function () {
    this.span = Math.min(MAX_SPAN, Math.max(MIN_SPAN, this.span));
    this.center[0] = Math.min(180, Math.max(-180, this.center[0]));
    this.center[1] = Math.min(85, Math.max(-85, this.center[1]));
  };

  WorldMap.prototype.render = function () {
    this.clamp();
    var b = this.bounds();
    this.svg.setAttribute("viewBox", [b[0], -b[3], b[2] - b[0], b[3] - b[1]].join(" "));
    this.svg.setAttribute("data-bounds", b.map(function (v) { return v.toFixed(6); }).join(","));
    var perPx = this.span / this.size()[0];
    this.svg.querySelectorAll(".pin").forEach(function (pin) { pin.setAttribute("r", String(7 * perPx)); });
    this.svg.querySelectorAll(".pin-line").forEach(function (line) {
      line.setAttribute("stroke-width", String(2 * perPx));
    });
  };

  WorldMap.prototype.drawGraticule = function () {
    var g = this.svg.querySelector("#graticule");
    var d = "";
    for (var lon = -180; lon <= 180; lon += 30) { d += "M" + lon + " -90V90"; }
    for (var lat = -60; lat <= 60; lat += 30) { d += "M-180 " + (-lat) + "H180"; }
    g.appendChild(el("path", {d: d, "vector-effect": "non-scaling-stroke"}));
  };

  WorldMap.prototype.toLonLat = function (clientX, clientY) {
    var r = this.svg.getBoundingClientRect();
    var b = this.bounds();
    var lon = b[0] + (clientX - r.left) / r.width * (b[2] - b[0]);
    var lat = b[3] - (clientY - r.top) / r.height * (b[3] - b[1]);
    return [lon, lat];
  };

  WorldMap.prototype.zoomBy = function (factor, clientX, clientY) {
    var before = clientX === undefined ? null : this.toLonLat(clientX, clientY);
    this.span = Math.min(MAX_SPAN, Math.max(MIN_SPAN, this.span / factor));
    if (before) {
      // keep the point under the pointer where it is
      this.render();
      var after = this.toLonLat(clientX, clientY);
      this.center[0] += before[0] - after[0];
      this.center[1] += before[1] - after[1];
    }
    this.render();
  };

  WorldMap.prototype.pin = function (cls, lon, lat) {
    var perPx = this.span / this.size()[0];
    var pin = el("circle", {"class": "pin " + cls, cx: lon, cy: -lat, r: 7 * perPx});
    this.overlay.appendChild(pin);
    return pin;
  };

  WorldMap.prototype.line = function (a, b) {
    var perPx = this.span / this.size()[0];
    var line = el("line", {"class": "pin-line", x1: a[0], y1: -a[1], x2: b[0], y2: -b[1], "stroke-width": 2 * perPx});
    this.overlay.insertBefore(line, this.overlay.firstChild);
    return line;
  };

  WorldMap.prototype.place = function (lon, lat) {
    if (this.marker) { this.marker.remove(); }
    this.guess = [lon, lat];
    this.marker = this.pin("guess", lon, lat);
    this.listeners.forEach(function (fn) { fn(lon, lat); });
  };

  WorldMap.prototype.clear = function () {
    if (this.marker) { this.marker.remove(); }
    this.marker = null;
    this.guess = null;
  };

  WorldMap.prototype.bind = function () {
    var self = this;
    var svg = this.svg;
    var down = null;
    var pointers = {};
    var pinch = null;
    svg.addEventListener("pointerdown", function (e) {
      pointers[e.pointerId] = [e.clientX, e.clientY];
      var ids = Object.keys(pointers);
      if (ids.length === 2) {
        var p = pointers[ids[0]], q = pointers[ids[1]];
        pinch = {dist: Math.hypot(p[0] - q[0], p[1] - q[1]), span: self.span};
        down = null;
        return;
      }
      down = {x: e.clientX, y: e.clientY, center: self.center.slice(), moved: false};
      try { svg.setPointerCapture(e.pointerId); } catch (err) { /* a synthetic pointer */ }
    });
    svg.addEventListener("pointermove", function (e) {
      if (pointers[e.pointerId]) { pointers[e.pointerId] = [e.clientX, e.clientY]; }
      var ids = Object.keys(pointers);
      if (pinch && ids.length === 2) {
        var p = pointers[ids[0]], q = pointers[ids[1]];
        var dist = Math.hypot(p[0] - q[0], p[1] - q[1]);
        if (dist > 0) { self.span = pinch.span * pinch.dist / dist; self.render(); }
        return;
      }
      if (!down) { return; }
      var dx = e.clientX - down.x, dy = e.clientY - down.y;
      if (!down.moved && Math.hypot(dx, dy) < 5) { return; }
      down.moved = true;
      svg.classList.add("dragging");
      var perPx = self.span / self.size()[0];
      self.center = [down.center[0] - dx * perPx, down.center[1] + dy * perPx];
      self.render();
    });
    function end(e) {
      delete pointers[e.pointerId];
      if (Object.keys(pointers).length < 2) { pinch = null; }
      svg.classList.remove("dragging");
      if (e.type === "pointerup" && down && !down.moved && self.enabled) {
        var ll = self.toLonLat(e.clientX, e.clientY);
        if (Math.abs(ll[1]) <= 90 && Math.abs(ll[0]) <= 180) { self.place(ll[0], ll[1]); }
      }
      down = null;
    }
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
    svg.addEventListener("wheel", function (e) {
      e.preventDefault();
      self.zoomBy(e.deltaY < 0 ? 1.25 : 0.8, e.clientX, e.clientY);
    }, {passive: false});
    window.addEventListener("resize", function () { self.render(); });
  };

  window.WorldMap = WorldMap;
})();
