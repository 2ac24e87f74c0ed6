// How she listened to this clip: the spans of the recording played (its own time), plays, seeks and
// seconds playing. The record starts from what the server kept (data-record: a reload continues it)
// and goes to /api/listening every 5 s of play, on pause, seek and when the page is hidden; the
// server merges it so that nothing decreases. item.js asks ready() before a submit (the must-hear
// minimum) and extend(body) to add the record and the "I recognise" answers to it.
"use strict";

(function () {
  var holder = document.getElementById("listening");
  var item = document.getElementById("item");
  var audio = document.getElementById("audio");
  if (!holder || !item || !audio) { return; }
  var itemId = item.getAttribute("data-item-id");
  var csrf = item.getAttribute("data-csrf");
  var submit = document.getElementById("submit");
  var kept = {};
  try { kept = JSON.parse(holder.getAttribute("data-record") || "{}") || {}; } catch (e) { kept = {}; }
  var spans = (kept.spans || []).slice();
  var plays = kept.plays || 0, seeks = kept.seeks || 0, played = kept.played_s || 0;
  var spanStart = null, last = null, playingSince = null, lastPost = 0, lastSeekPost = 0;
  var mustS = Number(holder.getAttribute("data-must-hear-s") || 0);
  var mustShare = Number(holder.getAttribute("data-must-hear-share") || 0);
  var wasReady = null;

  function now() { return Date.now(); }

  function union(list) {
    var sorted = list.slice().sort(function (a, b) { return a[0] - b[0]; });
    var out = [];
    sorted.forEach(function (s) {
      if (out.length && s[0] <= out[out.length - 1][1]) { out[out.length - 1][1] = Math.max(out[out.length - 1][1], s[1]); }
      else { out.push([s[0], s[1]]); }
    });
    return out;
  }

  function closeSpan() {
    if (spanStart !== null && last !== null && last > spanStart) { spans = union(spans.concat([[spanStart, last]])); }
    spanStart = null;
    last = null;
  }

  function current() {
    var all = spans;
    if (spanStart !== null && last !== null && last > spanStart) { all = union(spans.concat([[spanStart, last]])); }
    var playing = played + (playingSince !== null ? (now() - playingSince) / 1000 : 0);
    return {
      spans: all.map(function (s) { return [Math.round(s[0] * 1000) / 1000, Math.round(s[1] * 1000) / 1000]; }),
      plays: plays, seeks: seeks, played_s: Math.round(playing * 1000) / 1000
    };
  }

  function heard() {
    return current().spans.reduce(function (sum, s) { return sum + (s[1] - s[0]); }, 0);
  }

  function need() {
    var duration = audio.duration;
    if (!mustS && !mustShare) { return 0; }
    if (!isFinite(duration) || !duration) { return Infinity; }  // not known yet: wait for the metadata
    var seconds = mustS ? Math.min(mustS, duration) : mustShare * duration;
    return Math.max(0, seconds - 0.5);  // the server's tolerance (timeupdate comes every 250 ms or so)
  }

  function ready() { return heard() >= need(); }

  function gate() {
    if (!submit) { return; }
    var ok = ready();
    if (ok !== wasReady) {
      wasReady = ok;
      submit.disabled = !ok;
      var note = document.getElementById("must-hear");
      if (note) { note.classList.toggle("done", ok); }
    }
  }

  function post() {
    lastPost = now();
    var body = current();
    body.item_id = itemId;
    try {
      fetch("/api/listening", {
        method: "POST", credentials: "same-origin", keepalive: true,
        headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf, "Accept": "application/json"},
        body: JSON.stringify(body)
      }).catch(function () { /* the next post, or the submit, carries the whole record again */ });
    } catch (e) { /* idem */ }
  }

  audio.addEventListener("play", function () {
    plays += 1;
    playingSince = now();
    spanStart = audio.currentTime;
    last = audio.currentTime;
    post();
  });
  audio.addEventListener("timeupdate", function () {
    if (spanStart === null || audio.paused) { return; }
    var t = audio.currentTime;
    if (t >= last && t - last < 1.5) { last = t; }
    else { closeSpan(); spanStart = t; last = t; }  // a jump the seeking events did not announce
    gate();
    if (now() - lastPost >= 5000) { post(); }
  });
  audio.addEventListener("seeking", function () {
    seeks += 1;
    closeSpan();
  });
  audio.addEventListener("seeked", function () {
    if (!audio.paused) { spanStart = audio.currentTime; last = audio.currentTime; }
    if (now() - lastSeekPost >= 1000) { lastSeekPost = now(); post(); }
  });
  function stopped() {
    closeSpan();
    if (playingSince !== null) { played += (now() - playingSince) / 1000; playingSince = null; }
    gate();
    post();
  }
  audio.addEventListener("pause", stopped);
  audio.addEventListener("ended", stopped);
  audio.addEventListener("loadedmetadata", gate);
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") { post(); } });

  function recognised() {
    var place = document.getElementById("recognise-place");
    if (!place) { return null; }
    var name = document.getElementById("recognise-language-name").value.trim();
    return {place: place.checked, language: document.getElementById("recognise-language").checked,
            language_name: name || null};
  }

  window.AglwListening = {
    ready: ready,
    why: function () { return "Listen to more of the recording before you submit."; },
    extend: function (body) {
      body.listening = current();
      var r = recognised();
      if (r) { body.recognised = r; }
      return body;
    }
  };
  gate();
})();
