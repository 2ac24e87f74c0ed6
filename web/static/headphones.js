// The headphone check (Woods et al. 2017): six trials of three tones; which is the quietest?
// The tones come from /hp/<trial>.wav, made by the server for this participant; the answers are
// sent together and scored there (the page never knows the right ones). A reload starts over.
"use strict";

(function () {
  var root = document.getElementById("hp");
  if (!root) { return; }
  var trials = Number(root.getAttribute("data-trials"));
  var csrf = root.getAttribute("data-csrf");
  var play = document.getElementById("hp-play");
  var label = document.getElementById("hp-trial");
  var status = document.getElementById("hp-status");
  var buttons = Array.prototype.slice.call(root.querySelectorAll("[data-answer]"));
  var trial = 1, answers = [], sound = null;

  function enable(on) { buttons.forEach(function (b) { b.disabled = !on; }); }

  play.addEventListener("click", function () {
    if (sound) { sound.pause(); }
    var mine = sound = new Audio("/hp/" + trial + ".wav");
    status.textContent = "";
    var started = sound.play();
    if (started && started.catch) {
      started.catch(function (err) {
        // a play interrupted by the answer (AbortError) is no failure
        if (mine === sound && !(err && err.name === "AbortError")) {
          status.textContent = "The tones could not be played; press Play again.";
        }
      });
    }
    enable(true);  // answering is allowed once the trial's tones were asked for
  });

  buttons.forEach(function (button) {
    button.addEventListener("click", function () {
      if (answers.length >= trials) { return; }
      answers.push(Number(button.getAttribute("data-answer")));
      if (sound) { sound.pause(); sound = null; }
      enable(false);
      if (answers.length < trials) {
        trial += 1;
        label.textContent = "Trial " + trial + " of " + trials;
        return;
      }
      label.textContent = "Checking…";
      play.disabled = true;
      send();
    });
  });

  // The page's buttons come disabled: a press before this script is ready would do nothing.
  play.disabled = false;

  function send() {
    fetch("/api/headphones", {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf, "Accept": "application/json"},
      body: JSON.stringify({answers: answers})
    }).then(function (response) {
      if (response.ok || response.status === 409) { window.location.replace("/"); return; }
      return response.json().catch(function () { return {}; }).then(function (data) {
        status.textContent = "Not stored: " + (data.error || "the server answered " + response.status) + " Press Play to try again.";
        answers = []; trial = 1; play.disabled = false; label.textContent = "Trial 1 of " + trials;
      });
    }).catch(function () {
      status.textContent = "Not stored: the server could not be reached. Retrying…";
      window.setTimeout(send, 2000);
    });
  }
})();
