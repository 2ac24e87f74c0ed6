"""ISO 3166-1 alpha-2 code -> continent, in the six AGL1K continent names plus Antarctica.

Transcontinental countries are assigned where AGL1K places its own clips (Russia: Europe;
Egypt: Africa; Türkiye, Georgia, Armenia, Azerbaijan, Cyprus, Kazakhstan: Asia).
"""

from __future__ import annotations

_CODES_BY_CONTINENT: dict[str, str] = {
    "Africa": (
        "AO BF BI BJ BW CD CF CG CI CM CV DJ DZ EG EH ER ET GA GH GM GN GQ GW KE KM LR LS LY MA MG ML "
        "MR MU MW MZ NA NE NG RE RW SC SD SH SL SN SO SS ST SZ TD TG TN TZ UG YT ZA ZM ZW"
    ),
    "Asia": (
        "AE AF AM AZ BD BH BN BT CC CN CX CY GE HK ID IL IN IO IQ IR JO JP KG KH KP KR KW KZ LA LB LK "
        "MM MN MO MV MY NP OM PH PK PS QA SA SG SY TH TJ TL TM TR TW UZ VN YE"
    ),
    "Europe": (
        "AD AL AT AX BA BE BG BY CH CZ DE DK EE ES FI FO FR GB GG GI GR HR HU IE IM IS IT JE LI LT LU "
        "LV MC MD ME MK MT NL NO PL PT RO RS RU SE SI SJ SK SM UA VA XK"
    ),
    "North America": (
        "AG AI AW BB BL BM BQ BS BZ CA CR CU CW DM DO GD GL GP GT HN HT JM KN KY LC MF MQ MS MX NI PA "
        "PM PR SV SX TC TT UM US VC VG VI"
    ),
    "South America": "AR BO BR CL CO EC FK GF GS GY PE PY SR UY VE",
    "Oceania": (
        "AS AU CK FJ FM GU KI MH MP NC NF NR NU NZ PF PG PN PW SB TK TO TV VU WF WS"
    ),
    "Antarctica": "AQ BV HM TF",
}

CONTINENT_BY_ISO2: dict[str, str] = {
    code: continent
    for continent, codes in _CODES_BY_CONTINENT.items()
    for code in codes.split()
}


def continent_of_iso(code: str | None) -> str | None:
    """Continent name for an ISO 3166-1 alpha-2 code, or None when the code is unknown."""
    if not code:
        return None
    return CONTINENT_BY_ISO2.get(code.upper())
