// One clip: play, guess on the map (or "I can't tell"), confidence, clue, submit; game mode's reveal.
// The server decides what page comes next: after a stored answer the page reloads "/" (study mode)
// or shows the reveal and reloads on "Next". A failed submit says so and the same item is retried
// (the server keeps one guess per item however often it is sent).
"use strict";

(function () {
  var root = document.getElementById("item");
  if (!root) { return; }
  var itemId = root.getAttribute("data-item-id");
  var csrf = root.getAttribute("data-csrf");
  var mode = root.getAttribute("data-mode");
  var audio = document.getElementById("audio");
  var play = document.getElementById("play");
  var noGuess = document.getElementById("no-guess");
  var confidence = document.getElementById("confidence");
  var confidenceValue = document.getElementById("confidence-value");
  var clue = document.getElementById("clue");
  var submit = document.getElementById("submit");
  var status = document.getElementById("status");
  var map = new window.WorldMap(document.getElementById("map"));
  var shownAt = performance.now();
  var plays = 0, listened = 0, playingSince = null;
  var refused = false, sending = false, done = false;

  document.getElementById("zoom-in").addEventListener("click", function () { map.zoomBy(1.6); });
  document.getElementById("zoom-out").addEventListener("click", function () { map.zoomBy(1 / 1.6); });

  function say(text, cls) {
    status.textContent = text;
    status.className = "status" + (cls ? " " + cls : "");
  }

  function togglePlay() {
    if (audio.paused) {
      var started = audio.play();
      if (started && started.catch) {
        started.catch(function (err) {
          // a play interrupted by a pause (AbortError) is no failure
          if (!(err && err.name === "AbortError")) { say("The recording could not be played; try again.", "bad"); }
        });
      }
    } else {
      audio.pause();
    }
  }
  play.addEventListener("click", togglePlay);
  audio.addEventListener("play", function () { plays += 1; playingSince = performance.now(); play.textContent = "Pause"; });
  function stopped() {
    if (playingSince !== null) { listened += (performance.now() - playingSince) / 1000; playingSince = null; }
    play.textContent = "Play";
  }
  audio.addEventListener("pause", stopped);
  audio.addEventListener("ended", stopped);

  function setRefused(value) {
    refused = value;
    noGuess.setAttribute("aria-pressed", value ? "true" : "false");
    noGuess.classList.toggle("on", value);
    if (value) { map.clear(); say("No place: you answer \"I can't tell\"."); }
    else { say(""); }
  }
  noGuess.addEventListener("click", function () { setRefused(!refused); });
  map.listeners.push(function () { if (refused) { setRefused(false); } say(""); });
  confidence.addEventListener("input", function () { confidenceValue.textContent = Number(confidence.value).toFixed(2); });

  function answer() {
    var listen = listened + (playingSince !== null ? (performance.now() - playingSince) / 1000 : 0);
    var body = {
      item_id: itemId,
      refused: refused,
      confidence: Number(confidence.value),
      clue: clue.value,
      listen_s: Math.round(listen * 10) / 10,
      answer_s: Math.round((performance.now() - shownAt) / 100) / 10,
      n_plays: plays
    };
    if (!refused) {
      // longitudes past the dateline (a panned map) fold back into [-180, 180]
      var lon = ((map.guess[0] + 540) % 360) - 180;
      body.longitude = Math.round(lon * 1e5) / 1e5;
      body.latitude = Math.round(map.guess[1] * 1e5) / 1e5;
    }
    // listening.js: the listening record and the "I recognise" answers
    return window.AglwListening ? window.AglwListening.extend(body) : body;
  }

  function send() {
    if (sending || done) { return; }
    if (window.AglwListening && !window.AglwListening.ready()) { say(window.AglwListening.why(), "bad"); return; }
    if (!refused && !map.guess) { say("Click the map where you think it was recorded, or press \"I can't tell\".", "bad"); return; }
    sending = true;
    submit.disabled = true;
    say("Sending…");
    fetch("/api/submit", {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf, "Accept": "application/json"},
      body: JSON.stringify(answer())
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        return {ok: response.ok, status: response.status, data: data};
      });
    }).then(function (result) {
      sending = false;
      if (result.ok && result.data.stored) {
        done = true;
        say(result.data.created ? "Stored." : "Stored (it was already).", "good");
        if (!audio.paused) { audio.pause(); }
        if (result.data.reveal) {
          // the reveal's own address: a reload shows it again instead of moving on
          window.history.replaceState(null, "", "/reveal/" + encodeURIComponent(itemId));
          showReveal(result.data.reveal);
        }
        else { window.location.replace("/"); }
        return;
      }
      submit.disabled = false;
      var why = (result.data && result.data.error) || ("the server answered " + result.status);
      if (result.status === 409) { say("Not stored: " + why + " Reloading…", "bad"); window.setTimeout(function () { window.location.replace("/"); }, 1500); }
      else if (result.status >= 500) { say("Not stored: the server failed. Press Submit to try again.", "bad"); }
      else { say("Not stored: " + why, "bad"); }
    }).catch(function () {
      sending = false;
      submit.disabled = false;
      say("Not stored: the server could not be reached. Check your connection and press Submit again.", "bad");
    });
  }
  submit.addEventListener("click", send);

  function text(tag, content, cls) {
    var node = document.createElement(tag);
    node.textContent = content;
    if (cls) { node.className = cls; }
    return node;
  }

  function showReveal(r) {
    map.enabled = false;
    if (r.latitude !== null && r.longitude !== null) {
      if (r.guess) { map.line([r.guess[1], r.guess[0]], [r.longitude, r.latitude]); }
      r.models.forEach(function (m) { if (m.latitude !== null && m.longitude !== null) { map.pin("model", m.longitude, m.latitude); } });
      map.pin("truth", r.longitude, r.latitude);
    }
    var box = document.getElementById("reveal-box");
    var reveal = document.createElement("div");
    reveal.setAttribute("data-testid", "reveal");
    reveal.className = "reveal-text";
    reveal.appendChild(text("h2", "It was recorded in " + r.place));
    var legend = document.createElement("p");
    legend.className = "legend";
    [["truth", "the place"], ["guess", "your guess"], ["model", "the models"]].forEach(function (entry) {
      var key = text("span", entry[1], "key " + entry[0]);
      legend.appendChild(key);
    });
    reveal.appendChild(legend);
    reveal.appendChild(text("p", "Your error: " + r.error));
    var list = document.createElement("ul");
    r.models.forEach(function (m) { list.appendChild(text("li", m.model + ": " + m.error)); });
    if (r.models.length) { reveal.appendChild(text("p", "The models on this clip:")); reveal.appendChild(list); }
    var score = r.score;
    reveal.appendChild(text("p", "Your mean error so far: " + score.mean_error + " (n = " + score.n + ")."));
    score.beats.forEach(function (b) {
      reveal.appendChild(text("p", "You were closer than " + b.model + " on " + b.wins + " of " + b.n + " clips."));
    });
    var next = text("button", "Next clip", "button primary");
    next.type = "button";
    next.setAttribute("data-testid", "next");
    next.addEventListener("click", function () { window.location.replace("/"); });
    box.appendChild(reveal);
    box.appendChild(next);
    box.hidden = false;
    document.querySelector(".answer").hidden = true;
    next.focus();
  }

  // The page's buttons come disabled: a press before this script is ready would do nothing.
  [play, noGuess, submit].forEach(function (button) { button.disabled = false; });

  if (root.getAttribute("data-revealed") === "1") {
    done = true;
    submit.disabled = true;
    document.querySelector(".answer").hidden = true;
    fetch("/api/reveal/" + encodeURIComponent(itemId), {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (r) { if (r) { showReveal(r); } else { window.location.replace("/"); } })
      .catch(function () { say("The answer could not be loaded; reload the page.", "bad"); });
  }

  document.addEventListener("keydown", function (e) {
    var typing = e.target && (e.target.tagName === "TEXTAREA" ||
      (e.target.tagName === "INPUT" && e.target.type === "text"));
    if (e.key === " " && !typing && e.target !== audio) {
      e.preventDefault();  // the page would scroll, a focused button would click
      togglePlay();
    } else if (e.key === "Enter" && e.target.tagName !== "TEXTAREA") {
      e.preventDefault();  // a focused button would click itself (and toggle "I can't tell" back)
      if (done) { var next = document.querySelector("[data-testid=next]"); if (next) { next.click(); } }
      else { send(); }
    }
  });
})();
