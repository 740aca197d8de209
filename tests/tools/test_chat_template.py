"""Chat templates: the guest's rendering of a conversation (CHAT.TXT through
lib/llm_chat.cpp and lib/llm_tokenizer.cpp, run on the host as
build/host/chattool) gives exactly the tokens of the model's own Jinja
template rendered by Debian's python3-jinja2 and encoded by tools/tokenizer.py;
templates that CHAT.TXT cannot express are refused by name; a broken CHAT.TXT
is refused with the line and the field; the exporter writes CHAT.TXT."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
jinja2 = pytest.importorskip("jinja2", reason="python3-jinja2 missing: run tools/setup.sh")
import chat_template as CT        # noqa: E402
import make_chat_model as MCM     # noqa: E402
import tokbin                     # noqa: E402
import tokenizer as T             # noqa: E402

CHATTOOL = os.path.join(ROOT, "build", "host", "chattool")
SHARED = os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models"))
SMOLLM2_TOKENIZER = os.path.join(SHARED, "smollm2-tokenizer", "tokenizer.json")

# Qwen2.5-Instruct's template (its tool-calling branches shortened: they only
# run when `tools` are given or a message has tool calls, which chat never does).
QWEN25_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""
# Qwen2-Instruct's: the default system message in a loop.first test.
QWEN2_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                  "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
                  "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
                  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
# Plain ChatML without a default system message.
CHATML_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content']"
                   " + '<|im_end|>' + '\\n'}}{% endfor %}"
                   "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
TEMPLATES = {"smollm2": MCM.SMOLLM2_TEMPLATE, "qwen2.5": QWEN25_TEMPLATE, "qwen2": QWEN2_TEMPLATE,
             "chatml": CHATML_TEMPLATE}

# Llama 2: the system message is folded into the first [INST] block.
LLAMA2_TEMPLATE = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
                   "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
                   "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
                   "{% if loop.index0 == 0 and system_message != false %}"
                   "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
                   "{% else %}{% set content = message['content'] %}{% endif %}"
                   "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
                   "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}"
                   "{% endif %}{% endfor %}")
# Llama 3: trims every message.
LLAMA3_TEMPLATE = ("{% set loop_messages = messages %}{% for message in loop_messages %}"
                   "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
                   " + message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
                   "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
                   "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
                   "{% endif %}")

# Written independently of chat_template.CHECK_CONVERSATIONS.
CONVERSATIONS = [
    [("user", "Hello!")],
    [("system", "You answer in one word."), ("user", "Colour of the sky?")],
    [("user", "Tell me a story."), ("assistant", "Once upon a time there was a cat."),
     ("user", "And then?"), ("assistant", "It slept.\n\nThe end."), ("user", "Thanks")],
    [("system", "Tu es un assistant très poli."), ("user", "Ça va ? 😀 日本語もOK"),
     ("assistant", "Très bien, merci ! 🎉"), ("user", "Ελληνικά; Привет!")],
    [("user", " leading and trailing spaces "), ("assistant", "\n"), ("user", "1234567890")],
    [("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d"), ("user", "e"),
     ("assistant", "f"), ("user", "g")],
]


@pytest.fixture(scope="module")
def chattool():
    if not os.path.exists(CHATTOOL):
        subprocess.check_call(["make", "-s", "-C", ROOT, "build/host/chattool"])
    return CHATTOOL


def tokenizers():
    yield "synthetic"
    yield "smollm2"


@pytest.fixture(scope="module", params=list(tokenizers()))
def tok_pair(request, tmp_path_factory):
    """(tokenizer.json path, TOK.BIN path) of a ChatML tokenizer."""
    d = tmp_path_factory.mktemp("tok-" + request.param)
    if request.param == "synthetic":
        path = os.path.join(d, "tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(MCM.tokenizer_json(320), f, ensure_ascii=False)
    else:
        if not os.path.exists(SMOLLM2_TOKENIZER):
            pytest.skip(f"{SMOLLM2_TOKENIZER} missing (set KAI_SHARED_MODELS)")
        path = SMOLLM2_TOKENIZER
    tb = os.path.join(d, "TOK.BIN")
    tokbin.write_tokbin(path, tb, eos_ids=[2])
    return path, tb


def conversation_input(conv):
    return "".join(f"{r} {CT._escape(c)}\n" for r, c in conv)


def guest_ids(chattool, chat_txt, tok_bin, conv, gp):
    args = [chattool, chat_txt, tok_bin, "ids"] + (["--generation-prompt"] if gp else [])
    out = subprocess.run(args, input=conversation_input(conv).encode(), capture_output=True, check=True)
    return [int(x) for x in out.stdout.split()]


def guest_text(chattool, chat_txt, conv, gp):
    args = [chattool, chat_txt, "-", "text"] + (["--generation-prompt"] if gp else [])
    out = subprocess.run(args, input=conversation_input(conv).encode(), capture_output=True, check=True)
    return out.stdout.decode("utf-8")


def config(template):
    return MCM.tokenizer_config(template)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_guest_rendering_equals_jinja_token_for_token(chattool, tok_pair, tmp_path, name):
    tok_json, tok_bin = tok_pair
    tok = T.load(tok_json)
    form = CT.convert(config(TEMPLATES[name]), tok)
    assert form["name"] == "chatml"
    assert form["end_of_turn"] == [tok.added["<|im_end|>"]]
    chat_txt = str(tmp_path / "CHAT.TXT")
    CT.write(form, chat_txt)
    jr = CT.JinjaRenderer(TEMPLATES[name], config(TEMPLATES[name]))
    for conv in CONVERSATIONS:
        for gp in (False, True):
            want_text = jr.render(conv, gp)
            assert guest_text(chattool, chat_txt, conv, gp) == want_text, (name, conv, gp)
            want = tok.encode(want_text)
            assert guest_ids(chattool, chat_txt, tok_bin, conv, gp) == want, (name, conv, gp)


def test_default_system_messages_are_the_templates(tok_pair):
    tok = T.load(tok_pair[0])
    smol = CT.convert(config(MCM.SMOLLM2_TEMPLATE), tok)
    assert smol["default_system"] == "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    assert smol["generation_prompt"] == "<|im_start|>assistant\n"
    assert smol["assistant_suffix"] == "<|im_end|>\n"
    qwen = CT.convert(config(QWEN25_TEMPLATE), tok)
    assert qwen["default_system"] == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    assert CT.convert(config(CHATML_TEMPLATE), tok)["default_system"] is None


@pytest.mark.parametrize("template,family", [(LLAMA2_TEMPLATE, "llama2/mistral"), (LLAMA3_TEMPLATE, "llama3"),
                                             ("{{ messages[0]['content'] | upper }}", "unknown template")])
def test_templates_it_cannot_express_are_refused_by_name(tok_pair, template, family):
    tok = T.load(tok_pair[0])
    with pytest.raises(CT.ChatTemplateError) as e:
        CT.convert(dict(config(template), bos_token="<s>", eos_token="</s>"), tok)
    assert f"chat template '{family}" in str(e.value)
    assert "cannot be expressed" in str(e.value)


def test_chat_txt_round_trips(tok_pair):
    form = CT.convert(config(QWEN25_TEMPLATE), T.load(tok_pair[0]))
    assert CT.loads(CT.dumps(form)) == form


@pytest.mark.parametrize("mutate,message", [
    (lambda s: s.replace("kai-chat 1", "kai-chat 2"), "line 1: not a CHAT.TXT"),
    (lambda s: s.replace("user_prefix", "users_prefix"), "line 6: unknown field 'users_prefix'"),
    (lambda s: s.replace("end_of_turn 2", "end_of_turn 2x"), "end_of_turn: not a list of token ids"),
    (lambda s: s.replace("end_of_turn 2", "end_of_turn 1 2 3 4 5"), "end_of_turn: more than 4 ids"),
    (lambda s: s.replace("end_of_turn 2\n", ""), "CHAT.TXT: missing field 'end_of_turn'"),
    (lambda s: s.replace("begin \n", ""), "CHAT.TXT: missing field 'begin'"),
    (lambda s: s.replace("system\\n", "system\\q", 1), "line 4: bad escape in 'system_prefix'"),
    (lambda s: s.replace("user\\n", "user" + "x" * 130, 1), "value longer than 128 bytes in 'user_prefix'"),
])
def test_broken_chat_txt_is_refused_with_line_and_field(chattool, tmp_path, mutate, message):
    good = CT.dumps(CT.convert(config(MCM.SMOLLM2_TEMPLATE), T.load(_synthetic(tmp_path))))
    assert good.splitlines()[5].startswith("user_prefix ")
    p = tmp_path / "CHAT.TXT"
    p.write_text(mutate(good), encoding="utf-8")
    r = subprocess.run([chattool, str(p), "-", "text"], input=b"user hi\n", capture_output=True)
    assert r.returncode == 1
    assert message in r.stderr.decode(), r.stderr.decode()


def _synthetic(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(MCM.tokenizer_json(320)), encoding="utf-8")
    return str(path)


def test_exporter_writes_chat_txt_or_says_why_not(tmp_path):
    tok_path = _synthetic(tmp_path)
    out = tmp_path / "bundle"
    out.mkdir()
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config(QWEN2_TEMPLATE)), encoding="utf-8")
    note = CT.export(tok_path, str(out))
    assert "chat template 'chatml'" in note
    assert CT.loads((out / "CHAT.TXT").read_text(encoding="utf-8"))["default_system"] == \
        "You are a helpful assistant."
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config(LLAMA2_TEMPLATE)), encoding="utf-8")
    note = CT.export(tok_path, str(out))
    assert "chat template 'llama2/mistral' cannot be expressed" in note
    assert not (out / "CHAT.TXT").exists()      # the stale one is gone too
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}), encoding="utf-8")
    assert "has no chat_template" in CT.export(tok_path, str(out))


def test_tiny_chat_bundle_carries_template_and_special_tokens(tmp_path):
    out = tmp_path / "tiny-chat"
    assert MCM.main(["--out", str(out), "--source-out", str(tmp_path / "src")]) == 0
    form = CT.loads((out / "CHAT.TXT").read_text(encoding="utf-8"))
    assert form["end_of_turn"] == [2] and form["name"] == "chatml"
    head = tokbin.read_header((out / "TOK.BIN").read_bytes())
    assert head["n_eos"] == 1 and head["eos0"] == 2
    tok = T.load(str(tmp_path / "src" / "tokenizer.json"))
    assert tok.encode("<|im_start|>user\n")[0] == 1 and 2 in tok.special_ids
