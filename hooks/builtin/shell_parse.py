"""A bounded, single-pass parser of the POSIX/bash command language into simple commands, for the guards: never raises, linear in the input."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Beyond these the guard does not try to understand the command: it asks the user instead.
MAX_CHARS = 100_000
MAX_DEPTH = 8

# Longest first: the lexer takes the first operator that matches at the cursor.
_OPERATORS = (";;&", ";;", ";&", ";", "&&", "&>>", "&>", "&", "||", "|&", "|", "(", ")",
              "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">")
REDIRECT_OPS = frozenset({"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">"})
WRITE_REDIRECTS = frozenset({"&>>", "&>", "<>", ">>", ">|", ">", ">&"})
_SEPARATORS = frozenset({";", "&&", "&", "||", "|&", "|", "(", ")", "\n", ";;", ";&", ";;&"})
# Reserved words that only introduce or close a compound command: what follows them still runs.
_PREFIX_WORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done", "esac"})
_WORD_END = frozenset(" \t\n;&|()<>")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIMPLE_CHARS = re.compile(r"[A-Za-z0-9_\-./=,:@%+^~ \t]*")


@dataclass(slots=True)
class Word:
    """One shell word after quote removal; `$X`, `${X}`, `$(…)` stay as written and make it `dynamic`."""

    text: str = ""
    dynamic: bool = False  # holds an expansion whose value the guard does not know
    glob: bool = False  # holds an unquoted *, ?, [ or {a,b}
    quoted: bool = False
    substs: list[Script] = field(default_factory=list)


@dataclass(slots=True)
class Redirect:
    op: str
    target: Word
    body: str | None = None  # a here-document's text (or a here-string's word)


@dataclass(slots=True)
class Simple:
    """One simple command: its words, its redirections, and the operator that came before it."""

    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    sep: str = ""
    substs: list[Script] = field(default_factory=list)  # every $(…), `…`, <(…) in its words and redirections


@dataclass(slots=True)
class Script:
    commands: list[Simple] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why the parse cannot be trusted (the guard asks)


def parse(command: str, depth: int = 0) -> Script:
    """The commands of `command`, in order. Never raises; anything it cannot follow is named in `problems`."""
    if len(command) > MAX_CHARS:
        return Script(problems=[f"it is too long to check ({len(command)} characters)"])
    if _SIMPLE_CHARS.fullmatch(command):
        # The common agent command: one simple command, no quoting; skip the character loop.
        words = [Word(w) for w in command.split()]
        return Script([Simple(words)] if words else [])
    try:
        parser = _Parser(command, depth)
        script = parser.script(0, closer=None)[0]
    except RecursionError:
        return Script(problems=["it nests too deeply to check"])
    return script


class _Parser:
    __slots__ = ("s", "n", "depth", "problems", "heredocs")

    def __init__(self, s: str, depth: int) -> None:
        self.s = s
        self.n = len(s)
        self.depth = depth
        self.problems: list[str] = []
        self.heredocs: list[tuple[Redirect, str, bool, bool]] = []  # redirect, delimiter, strip tabs, literal body

    # ------------------------------------------------------------------ commands

    def script(self, i: int, closer: str | None, depth: int | None = None) -> tuple[Script, int]:
        """Parse commands from i until `closer` (")" for $(…)) or the end; returns the script and the index after it."""
        depth = self.depth if depth is None else depth
        out = Script(problems=self.problems if closer is None else [])
        cur = Simple()
        sep = ""
        parens = 0
        case_mode: list[str] = []  # "head" (case … in), "pattern", "body" for each open case statement
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c in " \t":
                i += 1
                continue
            if c == "\\" and i + 1 < n and s[i + 1] == "\n":
                i += 2
                continue
            if c == "#":
                while i < n and s[i] != "\n":
                    i += 1
                continue
            if c == "\n":
                self._flush(out, cur, sep)
                cur, sep = Simple(), "\n"
                i = self._read_heredocs(i + 1)
                continue
            if closer == ")" and c == ")" and parens == 0 and not (case_mode and case_mode[-1] == "pattern"):
                self._flush(out, cur, sep)
                return out, i + 1
            op = self._operator(i)
            if op is not None and op not in REDIRECT_OPS and not (op in ("<", ">") and s.startswith("(", i + 1)):
                if case_mode and case_mode[-1] == "pattern":
                    if op == ")":
                        case_mode[-1] = "body"
                    i += len(op)
                    continue
                if op in (";;", ";&", ";;&") and case_mode:
                    case_mode[-1] = "pattern"
                if op == "(":
                    parens += 1
                elif op == ")":
                    parens = max(0, parens - 1)
                self._flush(out, cur, sep)
                cur, sep = Simple(), op
                i += len(op)
                continue
            if op is not None and not (op in ("<", ">") and s.startswith("(", i + 1)):
                i = self._redirect(i, op, cur, "", depth)
                continue
            # a word (possibly an fd number glued to a redirection: 2>file)
            start = i
            word, i = self._word(i, depth)
            if word.text.isdigit() and not word.quoted and i < n and s[i] in "<>" and i == start + len(word.text):
                op = self._operator(i)
                if op in REDIRECT_OPS:
                    i = self._redirect(i, op, cur, word.text, depth)
                    continue
            if case_mode:
                mode = case_mode[-1]
                if mode == "head":
                    if word.text == "in" and not word.quoted:
                        case_mode[-1] = "pattern"
                    cur.substs.extend(word.substs)
                    continue
                if mode == "pattern":
                    if word.text == "esac" and not word.quoted:
                        case_mode.pop()
                    continue
                if mode == "body" and word.text == "esac" and not word.quoted and not cur.words:
                    case_mode.pop()
                    continue
            if not cur.words and not word.quoted and word.text == "case":
                case_mode.append("head")
                continue
            cur.words.append(word)
            cur.substs.extend(word.substs)
        if closer is not None:
            out.problems.append("a command substitution is not closed")
        self._flush(out, cur, sep)
        if self.heredocs:
            for redirect, _, _, _ in self.heredocs:
                redirect.body = ""
            self.heredocs.clear()
        return out, i

    def _flush(self, out: Script, cur: Simple, sep: str) -> None:
        words = cur.words
        while words and not words[0].quoted and words[0].text in _PREFIX_WORDS:
            words.pop(0)
        if words and not words[0].quoted and words[0].text in ("for", "select", "function"):
            words.clear()  # `for x in a b` runs nothing itself; substitutions in it are kept in cur.substs
        if words or cur.redirects or cur.substs:
            cur.sep = sep
            out.commands.append(cur)

    def _operator(self, i: int) -> str | None:
        s = self.s
        if s[i] not in ";&|()<>":
            return None
        for op in _OPERATORS:
            if s.startswith(op, i):
                return op
        return None

    def _redirect(self, i: int, op: str, cur: Simple, fd: str, depth: int) -> int:
        i += len(op)
        while i < self.n and self.s[i] in " \t":
            i += 1
        if i >= self.n or self.s[i] in "\n;&|()<>":
            self.problems.append(f"a redirection ({op}) has no target")
            return i
        target, i = self._word(i, depth)
        redirect = Redirect(fd + op, target)
        if op in ("<<", "<<-"):
            self.heredocs.append((redirect, target.text, op == "<<-", target.quoted))
        elif op == "<<<":
            redirect.body = target.text
        cur.redirects.append(redirect)
        cur.substs.extend(target.substs)
        return i

    def _read_heredocs(self, i: int) -> int:
        """Consume the bodies of the here-documents opened on the line that just ended."""
        s, n = self.s, self.n
        for redirect, delim, strip, literal in self.heredocs:
            lines: list[str] = []
            while i < n:
                end = s.find("\n", i)
                end = n if end < 0 else end
                line = s[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
                lines.append(line)
            body = "\n".join(lines)
            if not literal and ("$(" in body or "`" in body):
                self.problems.append("a here-document runs a command substitution")
            redirect.body = body
        self.heredocs.clear()
        return min(i, n)

    # ------------------------------------------------------------------ words

    def _word(self, i: int, depth: int) -> tuple[Word, int]:
        s, n = self.s, self.n
        w = Word()
        buf: list[str] = []
        if s.startswith(("<(", ">("), i):
            sub, i = self._subst(i + 2, depth)
            w.substs.append(sub)
            w.dynamic = True
            w.text = "<(…)"
            return w, i
        while i < n:
            c = s[i]
            if c in _WORD_END:
                break
            if c == "\\":
                if i + 1 < n and s[i + 1] != "\n":
                    buf.append(s[i + 1])
                    w.quoted = True
                i += 2
            elif c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    self.problems.append("a quote is not closed")
                    buf.append(s[i + 1:])
                    i = n
                else:
                    buf.append(s[i + 1:end])
                    i = end + 1
                w.quoted = True
            elif c == '"':
                i = self._double_quoted(i + 1, w, buf, depth)
                w.quoted = True
            elif c == "$":
                i = self._dollar(i, w, buf, depth)
            elif c == "`":
                i = self._backtick(i, w, buf, depth)
            else:
                if c in "*?[" or (c == "{" and "," in s[i:i + 200].split("}", 1)[0]):
                    w.glob = True
                buf.append(c)
                i += 1
        w.text = "".join(buf)
        return w, i

    def _double_quoted(self, i: int, w: Word, buf: list[str], depth: int) -> int:
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c == '"':
                return i + 1
            if c == "\\" and i + 1 < n and s[i + 1] in '$`"\\\n':
                if s[i + 1] != "\n":
                    buf.append(s[i + 1])
                i += 2
            elif c == "$":
                i = self._dollar(i, w, buf, depth)
            elif c == "`":
                i = self._backtick(i, w, buf, depth)
            else:
                buf.append(c)
                i += 1
        self.problems.append("a quote is not closed")
        return n

    def _dollar(self, i: int, w: Word, buf: list[str], depth: int) -> int:
        s, n = self.s, self.n
        nxt = s[i + 1] if i + 1 < n else ""
        if nxt == "'":  # $'…': ANSI-C quoting, decoded
            j = i + 2
            out: list[str] = []
            while j < n and s[j] != "'":
                if s[j] == "\\" and j + 1 < n:
                    m = _ANSI_NUMERIC.match(s, j + 1)
                    if m:  # \xHH, \uHHHH, \UHHHHHHHH, \NNN: decoded, so `$'\x72\x6d'` is seen as `rm`
                        code = m.group(0)
                        base = 8 if code[0].isdigit() else 16
                        value = int(code if base == 8 else code[1:], base)
                        out.append(chr(value) if value < 0x110000 else "?")
                        j = m.end()
                        continue
                    out.append(_ANSI_ESCAPES.get(s[j + 1], s[j + 1]))
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            buf.extend(out)
            w.quoted = True
            return j + 1
        if nxt == "(" and s.startswith("$((", i):
            j, level = i + 3, 2
            while j < n and level:
                level += {"(": 1, ")": -1}.get(s[j], 0)
                j += 1
            buf.append(s[i:j])
            w.dynamic = True
            return j
        if nxt == "(":
            sub, j = self._subst(i + 2, depth)
            w.substs.append(sub)
            buf.append("$(…)")
            w.dynamic = True
            return j
        if nxt == "{":
            end = s.find("}", i + 2)
            end = n if end < 0 else end
            inner = s[i + 2:end]
            if "$(" in inner or "`" in inner:
                self.problems.append("a parameter expansion holds a command substitution")
            buf.append(s[i:end + 1])
            w.dynamic = True
            return end + 1
        m = _NAME.match(s, i + 1)
        if m:
            buf.append(s[i:m.end()])
            w.dynamic = True
            return m.end()
        if nxt and nxt in "@*#?$!-0123456789":
            buf.append(s[i:i + 2])
            w.dynamic = True
            return i + 2
        buf.append("$")
        return i + 1

    def _backtick(self, i: int, w: Word, buf: list[str], depth: int) -> int:
        s = self.s
        j = i + 1
        while j < self.n and s[j] != "`":
            j += 2 if s[j] == "\\" else 1
        inner = s[i + 1:j].replace("\\`", "`").replace("\\\\", "\\").replace("\\$", "$")
        if j >= self.n:
            self.problems.append("a backquoted command is not closed")
        if depth + 1 > MAX_DEPTH:
            self.problems.append("it nests command substitutions too deeply to check")
        else:
            sub = parse(inner, depth + 1)
            w.substs.append(sub)
        buf.append("`…`")
        w.dynamic = True
        return j + 1

    def _subst(self, i: int, depth: int) -> tuple[Script, int]:
        if depth + 1 > MAX_DEPTH:
            # Deeper than we follow: stop here (linear), and make the guard ask.
            self.problems.append("it nests command substitutions too deeply to check")
            return Script(), self.n
        saved = self.heredocs
        self.heredocs = []
        sub, j = self.script(i, closer=")", depth=depth + 1)
        self.heredocs = saved
        self.problems.extend(sub.problems)
        return sub, j


_ANSI_NUMERIC = re.compile(r"x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}")
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v",
                 "\\": "\\", "'": "'", '"': '"'}
