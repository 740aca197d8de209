#!/usr/bin/python3
"""Chat templates: from a model's Jinja `chat_template` to kai's CHAT.TXT.

    chat_template.py convert --config tokenizer_config.json --tokenizer tokenizer.json --out CHAT.TXT
    chat_template.py render --chat CHAT.TXT --conversation conv.json [--generation-prompt]

A Hugging Face model describes its conversation format as a Jinja program
(`chat_template` in tokenizer_config.json). kai's guest has no Jinja, so the
exporter turns the program into a small declarative form that the guest's
`lib/llm_chat.cpp` renders by concatenation (docs/model-format.md, CHAT.TXT):

    text = begin
         + for each message: prefix[role] + content + suffix[role]
         + generation_prompt          (when the assistant is to answer next)

with a default system message inserted as the first message when the
conversation has none. The form is found by rendering the template with
marker contents (`derive`), then checked by rendering a set of conversations
both ways (`verify`, with and without a system message, several turns,
Unicode, spaces at the ends of a message); a template whose output the form
does not reproduce exactly is refused, naming the template's family
(`family`), never approximated.

Needs Debian's python3-jinja2 for convert (tools/setup.sh installs it).
"""
import argparse
import hashlib
import json
import os
import sys

ROLES = ("system", "user", "assistant")
PIECE_MAX = 128      # lib/llm_chat.h kChatPieceMax: bytes of a field as written (escaped)
SYSTEM_MAX = 1024    # kChatSystemMax
MAGIC = "kai-chat 1"
FIELDS = ["name", "begin",
          "system_prefix", "system_suffix", "user_prefix", "user_suffix",
          "assistant_prefix", "assistant_suffix", "generation_prompt"]
# Marker contents: text no real template produces by itself.
MARK = {"S": "@@kai-system@@", "U1": "@@kai-user-1@@", "A1": "@@kai-assistant-1@@",
        "U2": "@@kai-user-2@@"}

# Conversations the derived form must render exactly as Jinja does.
CHECK_CONVERSATIONS = [
    [("user", "Hi")],
    [("system", "You are terse."), ("user", "Hi")],
    [("user", "What is 2+2?"), ("assistant", "4."), ("user", "And 3+3?")],
    [("system", "Réponds en français."), ("user", "Où est la gare ? 🚉"),
     ("assistant", "À gauche.\nPuis tout droit."), ("user", "Merci !")],
    [("user", "  spaces around  "), ("assistant", " ok "), ("user", "\ttab\n")],
    [("system", ""), ("user", "empty system")],
    [("user", "one"), ("assistant", "two"), ("user", "three"), ("assistant", "four"),
     ("user", "five")],
]


class ChatTemplateError(Exception):
    pass


def family(template):
    """A short name for the kind of template, for messages: the markers it uses."""
    known = [("<|im_start|>", "chatml"), ("<|start_header_id|>", "llama3"), ("[INST]", "llama2/mistral"),
             ("<start_of_turn>", "gemma"), ("<|user|>", "zephyr/phi3"), ("<|User|>", "deepseek"),
             ("### Instruction", "alpaca")]
    for marker, name in known:
        if marker in template:
            return name
    return "unknown template sha256:" + hashlib.sha256(template.encode()).hexdigest()[:12]


def template_of(config):
    """The Jinja source of a tokenizer_config.json dict, or None. A list of
    named templates (newer Hugging Face configs) gives the one named default."""
    t = config.get("chat_template")
    if isinstance(t, list):
        named = {x.get("name"): x.get("template") for x in t if isinstance(x, dict)}
        t = named.get("default")
    return t if isinstance(t, str) and t else None


def _token_text(v):
    if isinstance(v, dict):
        return v.get("content", "")
    return v or ""


class JinjaRenderer:
    """The template as Hugging Face's apply_chat_template runs it: a sandboxed
    environment, trim_blocks and lstrip_blocks, raise_exception, the special
    tokens of the config as variables."""

    def __init__(self, template, config):
        try:
            import jinja2
            import jinja2.sandbox
        except ImportError:
            raise ChatTemplateError("python3-jinja2 is not installed (tools/setup.sh installs it)")

        def raise_exception(msg):
            raise jinja2.exceptions.TemplateError(msg)

        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                      extensions=["jinja2.ext.loopcontrols"])
        env.globals["raise_exception"] = raise_exception
        env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
        self.jinja2 = jinja2
        self.tpl = env.from_string(template)
        self.vars = {k: _token_text(config.get(k)) for k in
                     ("bos_token", "eos_token", "unk_token", "pad_token")}

    def render(self, messages, generation_prompt):
        msgs = [{"role": r, "content": c} for r, c in messages]
        try:
            return self.tpl.render(messages=msgs, add_generation_prompt=generation_prompt, **self.vars)
        except self.jinja2.exceptions.TemplateError as e:
            raise ChatTemplateError(f"the template refused the conversation: {e}")


def render(form, messages, generation_prompt):
    """The form's text of a conversation: what lib/llm_chat.cpp computes."""
    out = [form["begin"]]
    if form.get("default_system") is not None and (not messages or messages[0][0] != "system"):
        messages = [("system", form["default_system"])] + list(messages)
    for role, content in messages:
        out += [form[role + "_prefix"], content, form[role + "_suffix"]]
    if generation_prompt:
        out.append(form["generation_prompt"])
    return "".join(out)


def _split(text, *markers):
    """text cut at each marker in turn: the len(markers)+1 pieces between them."""
    pieces = []
    for m in markers:
        i = text.find(m)
        if i < 0 or text.count(m) != 1:
            raise ValueError(m)
        pieces.append(text[:i])
        text = text[i + len(m):]
    return pieces + [text]


def _strip_front(text, front, what):
    if not text.startswith(front):
        raise ChatTemplateError(f"{what} does not follow the previous message's suffix")
    return text[len(front):]


def derive(jr):
    """The declarative form of a template, found by rendering marker conversations."""
    S, U1, A1, U2 = MARK["S"], MARK["U1"], MARK["A1"], MARK["U2"]
    try:
        # user_suffix: what follows a user message at the end.
        b = jr.render([("user", U1)], False)
        head_b, user_suffix = _split(b, U1)
        generation_prompt = _strip_front(jr.render([("user", U1)], True), b, "the generation prompt")
        _, between_users, _ = _split(jr.render([("user", U1), ("user", U2)], False), U1, U2)
        user_prefix = _strip_front(between_users, user_suffix, "a second user message")
        _, user_to_asst, assistant_suffix = _split(jr.render([("user", U1), ("assistant", A1)], False), U1, A1)
        assistant_prefix = _strip_front(user_to_asst, user_suffix, "an assistant message")
        head_a, sys_to_user, _ = _split(jr.render([("system", S), ("user", U1)], False), S, U1)
    except ValueError:
        raise ChatTemplateError("a message's content does not appear exactly once in the output")
    if not sys_to_user.endswith(user_prefix):
        raise ChatTemplateError("the first user message after a system message is rendered differently")
    system_suffix = sys_to_user[:len(sys_to_user) - len(user_prefix)]
    if not head_b.endswith(user_prefix):
        raise ChatTemplateError("the first user message is rendered differently from later ones")
    before_user = head_b[:len(head_b) - len(user_prefix)]   # begin (+ the default system block)
    form = {"user_prefix": user_prefix, "user_suffix": user_suffix,
            "assistant_prefix": assistant_prefix, "assistant_suffix": assistant_suffix,
            "system_suffix": system_suffix, "generation_prompt": generation_prompt}
    # head_a = begin + system_prefix. Without a system message the template
    # either renders a default one (before_user = head_a + D + system_suffix)
    # or none (before_user = begin).
    tail = system_suffix
    if before_user.startswith(head_a) and before_user.endswith(tail) and \
            len(before_user) >= len(head_a) + len(tail):
        form["default_system"] = before_user[len(head_a):len(before_user) - len(tail)]
        form["begin"], form["system_prefix"] = "", head_a
    elif head_a.startswith(before_user):
        form["default_system"] = None
        form["begin"], form["system_prefix"] = before_user, head_a[len(before_user):]
    else:
        raise ChatTemplateError("the start of the conversation depends on whether it has a system message")
    return form


def verify(jr, form):
    for conv in CHECK_CONVERSATIONS:
        for gp in (False, True):
            want = jr.render(conv, gp)
            got = render(form, conv, gp)
            if want != got:
                raise ChatTemplateError(
                    f"the declarative form renders {conv!r} (generation prompt {gp}) as {got!r}, "
                    f"the template as {want!r}")


def end_of_turn_ids(form, tok):
    """The ids that end an assistant's turn: the special token the assistant's
    suffix starts with (ChatML: <|im_end|>)."""
    suffix = form["assistant_suffix"]
    ids = []
    for text, i in sorted(tok.added.items(), key=lambda x: -len(x[0])):
        if text and suffix.startswith(text) and i in tok.special_ids:
            ids.append(i)
            break
    if not ids:
        raise ChatTemplateError(f"the assistant's suffix {suffix!r} does not start with a special token "
                                "(no end-of-turn id)")
    return ids


def convert(config, tok, name=None):
    """The CHAT.TXT form (a dict) of a tokenizer_config.json dict and a
    tools/tokenizer.py tokenizer, or ChatTemplateError naming the template."""
    template = template_of(config)
    if template is None:
        raise ChatTemplateError("tokenizer_config.json has no chat_template")
    fam = family(template)
    try:
        jr = JinjaRenderer(template, config)
        form = derive(jr)
        verify(jr, form)
        form["end_of_turn"] = end_of_turn_ids(form, tok)
    except ChatTemplateError as e:
        raise ChatTemplateError(f"chat template '{fam}' cannot be expressed in CHAT.TXT: {e}")
    form["name"] = (name or fam)[:31]
    for f in FIELDS[1:]:
        if len(_escape(form[f]).encode()) > PIECE_MAX:
            raise ChatTemplateError(f"chat template '{fam}': {f} is longer than {PIECE_MAX} bytes "
                                    "(lib/llm_chat.h kChatPieceMax)")
    if form["default_system"] is not None and len(_escape(form["default_system"]).encode()) > SYSTEM_MAX:
        raise ChatTemplateError(f"chat template '{fam}': the default system message is longer than "
                                f"{SYSTEM_MAX} bytes (lib/llm_chat.h kChatSystemMax)")
    return form


def _escape(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _unescape(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}[s[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def dumps(form):
    lines = [MAGIC]
    for f in FIELDS:
        lines.append(f"{f} {_escape(form[f])}")
    if form.get("default_system") is not None:
        lines.append(f"default_system {_escape(form['default_system'])}")
    lines.append("end_of_turn " + " ".join(str(i) for i in form["end_of_turn"]))
    return "\n".join(lines) + "\n"


def loads(text):
    lines = text.split("\n")
    if lines[0] != MAGIC:
        raise ChatTemplateError(f"CHAT.TXT: first line must be {MAGIC!r}")
    form = {"default_system": None}
    for line in lines[1:]:
        if not line:
            continue
        key, _, value = line.partition(" ")
        form[key] = [int(x) for x in value.split()] if key == "end_of_turn" else _unescape(value)
    return form


def write(form, path):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(dumps(form))


def export(tokenizer_path, out_dir, log_name="export_model"):
    """CHAT.TXT beside TOK.BIN from the tokenizer_config.json next to
    tokenizer_path, or none. Returns the INFO.TXT note; a template the form
    cannot express is reported (by name) and leaves no CHAT.TXT."""
    dst = os.path.join(out_dir, "CHAT.TXT")
    if os.path.exists(dst):
        os.remove(dst)              # never leave a stale template beside a new tokenizer
    if not tokenizer_path or not tokenizer_path.endswith(".json"):
        return "no CHAT.TXT (no Hugging Face tokenizer)"
    cfg_path = os.path.join(os.path.dirname(os.path.abspath(tokenizer_path)), "tokenizer_config.json")
    if not os.path.exists(cfg_path):
        return "no CHAT.TXT (no tokenizer_config.json)"
    import tokenizer as T
    try:
        with open(cfg_path, encoding="utf-8") as f:
            config = json.load(f)
        if template_of(config) is None:
            return "no CHAT.TXT (tokenizer_config.json has no chat_template)"
        form = convert(config, T.load(tokenizer_path))
    except (ChatTemplateError, ValueError, KeyError, OSError) as e:
        print(f"{log_name}: warning: CHAT.TXT not written: {e}", file=sys.stderr)
        return f"no CHAT.TXT ({e})"
    write(form, dst)
    return f"CHAT.TXT: chat template '{form['name']}', end of turn {form['end_of_turn']}"


def main(argv=None):
    ap = argparse.ArgumentParser(description="kai chat templates (CHAT.TXT)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="tokenizer_config.json's chat_template -> CHAT.TXT")
    c.add_argument("--config", required=True)
    c.add_argument("--tokenizer", required=True, help="tokenizer.json (for the end-of-turn id)")
    c.add_argument("--out", required=True)
    r = sub.add_parser("render", help="a conversation (JSON list of [role, content]) through CHAT.TXT")
    r.add_argument("--chat", required=True)
    r.add_argument("--conversation", required=True)
    r.add_argument("--generation-prompt", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        if a.cmd == "convert":
            import tokenizer as T
            with open(a.config, encoding="utf-8") as f:
                form = convert(json.load(f), T.load(a.tokenizer))
            write(form, a.out)
            print(f"wrote {a.out}: chat template '{form['name']}', end of turn {form['end_of_turn']}")
        else:
            with open(a.chat, encoding="utf-8") as f:
                form = loads(f.read())
            with open(a.conversation, encoding="utf-8") as f:
                conv = [tuple(m) for m in json.load(f)]
            sys.stdout.write(render(form, conv, a.generation_prompt))
    except (ChatTemplateError, OSError, ValueError) as e:
        print(f"chat_template: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
