"""What the tuner and lint must know of languages other than English (docs/tune.md, "What
it does"), and of the ways a description says when to use its skill.

The router's stopwords are English (§2.2), so a Portuguese prompt's "pra" or "esse" is a
rare word to it, rare words weigh most, and the tuner would offer them as the words a
description lacks. They name no task: a description that adds them matches every prompt
in that language. And the exclusion cues the relevance model reads are English (§9.12),
so a description's "勿用于…" would look to the tuner like any other sentence, one it
may drop to make room. Chinese and Japanese are read as runs of characters, so the
phrases the tuner offers from them must end at particles and pronouns and leave out the
words of asking every prompt has. These lists are deliberately small: the commonest
function words of the Latin-script languages authors write prompts in, the particles and
phrases of asking of Chinese and Japanese, and the usual ways to say "not for" in the
languages skill descriptions are written in.
"""

from __future__ import annotations

import re

from explorer.engine.base.text import norm_token

_FUNCTION_WORDS = {
    "portuguese": (
        "pra pro pras pros nesse nessa neste nesta nisso nisto desse dessa deste desta "
        "disso disto naquele naquela dum duma para por com sem que qual quais esse essa "
        "isso este esta isto aquele aquela aquilo uma umas uns dos das nos nas num numa "
        "pelo pela pelos pelas mas mais muito muita tem ter foi ser estar sua seu suas "
        "seus meu minha voce vou pode posso quero preciso fazer faz tambem como onde "
        "quando porque entao ainda sobre ate aqui ali agora ja"
    ),
    "spanish": (
        "para por con sin que cual cuales ese esa eso este esta esto aquel una unos unas "
        "los las del al mas muy tiene tener fue ser estar sus mis tus yo quiero puede "
        "puedo necesito hacer hace tambien como donde cuando porque entonces todavia "
        "sobre hasta aqui ahora ya"
    ),
    "french": (
        "pour par avec sans que qui quel quelle les des une aux du au dans sur mais plus "
        "tres est sont avoir etre fait faire mon mes ton tes ses nous vous ils elles je "
        "tu peux peut veux besoin aussi comme quand parce alors encore jusqu ici "
        "maintenant"
    ),
    "german": (
        "fur mit ohne und oder der die das dem den des ein eine einen einem einer ist "
        "sind hat haben war sein mein meine dein bitte auch wie wo wann weil dann noch "
        "uber bis ich du wir ihr sie kann mochte brauche machen nicht kein hier jetzt"
    ),
    "italian": (
        "per con senza che chi quale questo questa quello quella una uno gli del della "
        "dei delle nel nella sul sulla piu molto sono essere avere fatto fare mio mia tuo "
        "tua suo sua posso puo voglio bisogno anche come dove quando perche poi ancora "
        "qui qua ora"
    ),
    "dutch": (
        "voor met zonder het een van op te dat die dit deze maar meer heel zijn hebben "
        "wordt worden mijn jouw ook hoe waar wanneer omdat dan nog tot ik wij jullie nu de"
    ),
    # Danish and Norwegian share most of these; the ASCII ones only (§2.1 splits a word at
    # æ, ø or å, so "når" is no token to add), and none that is an English word a task
    # may be named by ("man" pages, a game "mod", "bare" metal, a "DIN" rail, "dig",
    # "med", "deg", "men", a cash "till"). "min" stays: "my" in a Danish prompt far more
    # often than a minimum in a description.
    "danish-norwegian": (
        "og at det den de en et til er som jeg hun af ikke der meg seg har om vi min dit "
        "hans hendes hennes deres havde hadde hende nu da fra du ud ut oss opp hvor eller "
        "hvad hva skal selv alle vil blev ble kan kunne jer noget noe "
        "ville jo efter etter ned skulle denne dette disse enn hvis nogle noen hos blive "
        "bli mange bliver blir gerne gjerne lidt litt helt lige hvordan hvorfor hvilken "
        "hvilke hver"
    ),
    "swedish": (
        "och att det den de en ett som jag hon inte har om min mitt mina ditt "
        "dina hans hennes deras hade honom henne nu da du ut sitt sina oss upp hur eller "
        "vad ska skall alla vill blev kan kunna er efter skulle denna detta dessa hos bli "
        "blir bara helt vilken vilka varje"
    ),
}

FOREIGN_FUNCTION_WORDS: frozenset[str] = frozenset(
    norm_token(word) for words in _FUNCTION_WORDS.values() for word in words.split()
)
"""Match tokens (§2.5) of other languages' function words: never a word to add."""

# Chinese and Japanese words of asking, wanting and helping that every prompt of those
# languages may share ("怎么" how, "什么" what, "看看" have a look, "需要" need). Phrases
# with a particle or pronoun in them ("帮我" help me, "这个" this) are cut apart at it
# (UNSPACED_EDGES) and need no entry.
UNSPACED_FUNCTION_PHRASES: frozenset[str] = frozenset(
    (
        "如何 怎样 怎么 什么 为什么 有什么 有没有 没有 可以 想要 需要 应该 然后 还有 已经 "
        "看看 看下 麻烦 どう これ それ あれ 何か ません ください してください"
    ).split()
)
"""Phrases of scripts written without spaces that name no task: never part of a phrase
to add."""

# Characters that end a Chinese or Japanese term: particles, pronouns and the plural of
# pronouns ("我们团队" holds "团队", not "们团队"), measure words, "this", "not", "one"
# ("这张照片的快门" holds the terms "照片" and "快门").
UNSPACED_EDGES: frozenset[str] = frozenset(
    "的了吗呢吧个张份我你他她它们这那不一在是和给帮把をはがにでとの"
)

# "Not for", "do not use", "does not apply" in the languages descriptions are written in
# besides English (English is the relevance model's own, route/relevance.py).
_NOT_FOR = re.compile(
    r"勿用|不用于|不适用|不要用|不要使用|请勿|禁止用于|不负责|不包括|不涵盖|使用しない|使わない|"
    r"対象外|向いていない|사용하지|쓰지\s*마|제외|해당하지|"
    r"\b(?:n[ãa]o\s+(?:usar|use|utilize|serve|é\s+para|e\s+para|cobre)"
    r"|no\s+(?:usar|uses|utilizar|sirve|es\s+para|cubre)"
    r"|ne\s+pas\s+utiliser|n'est\s+pas\s+pour|pas\s+pour"
    r"|nicht\s+(?:für|fur|verwenden|benutzen|geeignet)"
    r"|non\s+(?:usare|utilizzare|per|adatto)"
    r"|niet\s+(?:voor|gebruiken)"
    r"|ikke\s+(?:til|for|brug|bruk)|brug\s+(?:den\s+)?ikke|bruk\s+(?:den\s+)?ikke"
    r"|inte\s+f[öo]r|anv[äa]nd\s+(?:den\s+)?inte"
    r"|ikke\s+(?:bruges|brukes)|inte\s+anv[äa]ndas)\b",
    re.IGNORECASE,
)

# "Use when", "use for", "triggers on", in English and in the other languages descriptions
# are written in: a description that says when to use the skill in Danish or Chinese says
# it as well as one in English.
_WHEN_TO_USE = re.compile(
    r"\buse\b(?:\s+(?:this|it|the|skill))*\s+(?:when|whenever|for|if|after|before)\b"
    r"|\b(?:should|must|can|may)\s+be\s+used\s+(?:when|whenever|for|if|after|before)\b"
    r"|\b(?:is|are)\s+used\s+(?:when|whenever|if)\b"
    r"|\bwhen(?:ever)?\s+(?:the\s+|a\s+)?users?\b"
    r"|\btrigger"
    r"|\binvoke(?:\s+\w+)?\s+when\b|"
    r"触发|适用于|用于|使用场景|何时使用|当用户|時に使|ときに使|場合に使|使用する場合|トリガー|"
    r"때\s*사용|사용하세요|트리거|"
    r"\b(?:brug|bruk|bruges|brukes|anv[äa]nd|anv[äa]nds|gebruik|verwende[nt]?|benutze[nt]?|"
    r"nutze[nt]?|usa[r]?|[úu]sal[oa]|utiliza[r]?|utilize|utilise[rz]?|usare|utilizza(?:re)?)"
    r"(?:\s+(?:den|denne|dette|denna|deze|dit|diese[nsr]?|es|lo|la|esta|este|ce|cette|"
    r"questo|questa))?"
    r"(?:\s+(?:skill|skillen|f[æa]rdighed|vaardigheid|habilidad|comp[ée]tence|competenza|"
    r"f[äa]higkeit))?"
    r",?\s+(?:n[åäa]r|til|ved|hver\s+gang|för|vid|wanneer|bij|voor|wenn|bei|f[üu]r|"
    r"cuando|para|quando|lorsque|quand|pour|per)\b"
    r"|\b[àa]\s+utiliser\s+(?:quand|lorsque|pour)\b|\buse\s+(?:quando|para)\b",
    re.IGNORECASE,
)


def says_when_to_use(text: str) -> bool:
    """Whether a text says when to use the skill, in English or another language (lint's
    no-trigger-language rule; the tuner never drops such a sentence)."""
    return _WHEN_TO_USE.search(text) is not None


def says_not_for(sentence: str) -> bool:
    """Whether a sentence in another language says what the skill is not for."""
    return _NOT_FOR.search(sentence) is not None
