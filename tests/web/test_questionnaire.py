"""Who answered (issue 45): the researcher's questionnaire (validated at creation, shown after consent,
answers checked and stored on the server), the device class from the user agent (never the string
itself), and both reaching `aglw study participants --json`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlalchemy import select

from storage import tables as T
from tests.web.server_walk import app_for, invited, new_study
from workbench.errors import InputError
from workbench.studies import questionnaire as qn

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "questionnaire-example.toml"
# three real user agents: an iPhone's Safari, a Samsung tablet's Chrome, Firefox on Windows
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
          "Version/17.5 Mobile/15E148 Safari/604.1")
TABLET = ("Mozilla/5.0 (Linux; Android 13; SM-X200) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/120.0.0.0 Safari/537.36")
DESKTOP = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0"
ANSWERS = {"home_country": ["FR"], "native_languages": ["fra", "yue"], "other_languages": ["eng"],
           "countries_lived": ["FR", "MA"], "hearing": ["no_known_loss"], "device": ["computer"],
           "output": ["headphones"]}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "where", "field"), [
    ('[[question]]\nid = "Home"\nkind = "country"\ntext = "Where?"\n', "question 'Home'", "field id"),
    ('[[question]]\nid = "hearing"\nkind = "choice"\ntext = "Hearing?"\noptions = ["only one"]\n',
     "question 'hearing'", "field options"),
    ('[[question]]\nid = "age"\nkind = "number"\ntext = "Age?"\nmin = 99\nmax = 18\n', "question 'age'", "field min/max"),
    ('[[question]]\nid = "spoken"\nkind = "languages"\ntext = "Which?"\ncodes = ["xx1"]\n', "question 'spoken'",
     "field codes"),
    ('[[question]]\nid = "note"\nkind = "essay"\ntext = "Say"\n', "question 'note'", "field kind"),
    ('[[question]]\nid = "note"\nkind = "text"\ntext = "Say"\ncolour = "red"\n', "question 'note'", "field colour"),
])
def test_a_bad_questionnaire_is_one_line_naming_file_question_and_field(tmp_path: Path, text: str, where: str,
                                                                        field: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        qn.load_questionnaire(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and where in message and field in message, message


def test_the_example_questionnaire_is_valid_and_asks_what_the_issue_lists() -> None:
    questions = qn.load_questionnaire(EXAMPLE)["question"]
    kinds = {q["id"]: q["kind"] for q in questions}
    assert kinds["home_country"] == "country" and kinds["native_languages"] == "languages"
    assert kinds["other_languages"] == "languages" and kinds["countries_lived"] == "country"
    hearing = next(q for q in questions if q["id"] == "hearing")
    assert [o["value"] for o in hearing["options"]] == ["no_known_loss", "some_loss", "prefer_not"]
    output = next(q for q in questions if q["id"] == "output")
    assert [o["value"] for o in output["options"]] == ["headphones", "earbuds", "speakers"]


def test_answers_are_checked_against_the_questions() -> None:
    stored = qn.load_questionnaire(EXAMPLE)
    answers = qn.check_answers(stored, ANSWERS)
    assert answers["home_country"] == "FR" and answers["native_languages"] == ["fra", "yue"]
    assert answers["countries_lived"] == ["FR", "MA"] and answers["hearing"] == "no_known_loss"
    for bad, why in [({**ANSWERS, "home_country": ["XX"]}, "not one the form offers"),
                     ({**ANSWERS, "hearing": ["deaf"]}, "not one the form offers"),
                     ({k: v for k, v in ANSWERS.items() if k != "hearing"}, "required"),
                     ({**ANSWERS, "hearing": ["no_known_loss", "some_loss"]}, "takes one value"),
                     ({**ANSWERS, "admin": ["1"]}, "no question asks")]:
        with pytest.raises(InputError, match=why):
            qn.check_answers(stored, bad)
    text = {"title": "t", "intro": "", "question": [
        {"id": "note", "kind": "text", "text": "Anything?", "required": False, "help": "", "options": [],
         "multiple": False, "codes": [], "min": None, "max": None, "integer": False, "max_length": 20}]}
    assert qn.check_answers(text, {"note": ["  <b>hi</b> "]}) == {"note": "<b>hi</b>"}
    for bad in ("a\u202eb", "a\x07b", "x" * 21):
        with pytest.raises(InputError):
            qn.check_answers(text, {"note": [bad]})


@pytest.mark.parametrize(("agent", "expected"), [
    (IPHONE, {"class": "phone", "browser": "Mobile Safari", "os": "iOS"}),
    (TABLET, {"class": "tablet", "browser": "Chrome", "os": "Android"}),
    (DESKTOP, {"class": "desktop", "browser": "Firefox", "os": "Windows"}),
])
def test_the_device_class_comes_from_the_user_agent(agent: str, expected: dict[str, str]) -> None:
    assert qn.device_class(agent) == expected


def _walker(store, name: str, template: Path, agent: str = DESKTOP):  # type: ignore[no-untyped-def]
    return invited(store, name, app_for(store, name, template / "cache"), headers={"user-agent": agent})


def _post_answers(walker, answers: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    walker.page()
    fields = [("csrf", walker.csrf)] + [(k, v) for k, values in answers.items() for v in values]
    return walker.keep("POST /questionnaire", _form(walker, fields))


def _form(walker, fields: list[tuple[str, str]]):  # type: ignore[no-untyped-def]
    from urllib.parse import urlencode

    return walker.client.post("/questionnaire", content=urlencode(fields), follow_redirects=False,
                              headers={"content-type": "application/x-www-form-urlencoded"})


def test_the_questionnaire_comes_between_consent_and_the_headphone_check(project: Path, template: Path,
                                                                         capsys) -> None:  # type: ignore[no-untyped-def]
    store, config = new_study(project, "s1", per_participant=2, headphone_check="record",
                              questionnaire=qn.load_questionnaire(EXAMPLE))
    walker = _walker(store, "s1", template, IPHONE)
    assert 'data-testid="consent-agree"' in walker.page().text
    walker.consent()
    page = walker.page().text
    # a plain form: it posts without any script
    assert 'data-testid="questionnaire"' in page and 'data-testid="questionnaire-submit"' in page
    assert re.search(r'<form method="post" action="/questionnaire"', page) and "<script" not in page
    assert '<option value="MA">Morocco</option>' in page and '<option value="yue">Yue Chinese</option>' in page
    assert 'data-testid="hp-play"' not in page
    assert walker.headphones().status_code == 409  # the check waits for the questionnaire
    # refused server-side: a value the form never offered, a missing required answer
    bad = _post_answers(walker, {**ANSWERS, "home_country": ["ZZ"]})
    assert bad.status_code == 400 and "not one the form offers" in bad.text
    missing = _post_answers(walker, {k: v for k, v in ANSWERS.items() if k != "native_languages"})
    assert missing.status_code == 400 and "required" in missing.text
    assert 'data-testid="questionnaire"' in walker.page().text  # a reload: the form again, nothing stored
    forged = _form(walker, [("csrf", "forged"), ("hearing", "some_loss")])
    assert forged.status_code == 403
    ok = _post_answers(walker, ANSWERS)
    assert ok.status_code == 303
    page = walker.page().text
    assert 'data-testid="hp-play"' in page and 'data-testid="questionnaire"' not in page
    assert _post_answers(walker, {**ANSWERS, "home_country": ["DE"]}).status_code == 303  # the first answers stay
    with store.read() as connection:
        row = connection.execute(select(T.web_participant.c.answers, T.web_participant.c.device)).one()
    assert row.answers["home_country"] == "FR" and row.answers["countries_lived"] == ["FR", "MA"]
    assert row.device == {"class": "phone", "browser": "Mobile Safari", "os": "iOS"}
    # the participants' JSON carries her answers and device, and no byte of the user agent
    from cli.main import main

    capsys.readouterr()
    assert main(["--db", str(project), "--json", "study", "participants", "s1"]) == 0
    out = capsys.readouterr().out
    payload = json.loads(out)
    (person,) = payload["participants"]
    assert person["answers"]["native_languages"] == ["fra", "yue"] and person["device"]["class"] == "phone"
    assert {"participant", "status", "n_guesses", "excluded", "reason"} <= set(person)
    for fragment in ("Mozilla", "AppleWebKit", "17_5", "15E148"):
        assert fragment not in out
    with store.read() as connection:
        everything = json.dumps([dict(r._mapping) for r in connection.execute(select(T.web_participant))],
                                default=str)
    assert "Mozilla" not in everything and "15E148" not in everything
    store.dispose()


def test_study_web_takes_the_questionnaire_and_refuses_a_bad_one_in_one_line(project: Path, tmp_path: Path,
                                                                             capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    bad = _write(tmp_path, '[[question]]\nid = "hearing"\nkind = "choice"\ntext = "Hearing?"\n')
    capsys.readouterr()
    rc = main(["--db", str(project), "study", "web", "s2", "--clips", "all", "--questionnaire", str(bad)])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and str(bad) in err and "question 'hearing'" in err and "options" in err
    assert len(err.splitlines()) == 1, err
    rc = main(["--db", str(project), "--json", "study", "web", "s2", "--clips", "all", "--questionnaire",
               str(EXAMPLE), "--must-hear", "50%", "--recognise"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["questionnaire"]["question"][0]["id"] == "home_country"
    assert payload["options"] == {"recognise": True, "must_hear_share": 0.5}
    rc = main(["--db", str(project), "study", "web", "s3", "--clips", "all", "--must-hear", "lots"])
    assert rc == 2
