#!/usr/bin/python3
"""Renders chat templates the way Hugging Face Transformers does, for the byte-for-byte test of
our Jinja interpreter (tests/model/chat_template_jinja2_test.cpp).

The environment mirrors transformers' `_compile_jinja_template`: an ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, the loopcontrols extension and the `{% generation %}` tag,
its own `tojson` (json.dumps with ensure_ascii=False), and the raise_exception / strftime_now
globals. `render` passes messages, tools (None when absent), documents=None and
add_generation_prompt, then the special tokens and any extra keyword arguments, as
`apply_chat_template` does.

Usage: render_chat_template.py CASES_JSON
CASES_JSON (tests/data/chat_templates/cases.json) names the templates (files beside it, with
their bos/eos tokens), the message lists (with tools and extra keyword arguments) and the time
strftime_now() sees. Every template renders every case with add_generation_prompt true and false.
Output (stdout): {"TEMPLATE|CASE|true": {"output": str} | {"error": str}, ...} as JSON.

Needs Debian's python3-jinja2 (deploy/install-deps.sh installs it).
"""
import datetime
import json
import sys

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("python3-jinja2 is missing: run deploy/install-deps.sh\n")
    sys.exit(3)


class GenerationTag(jinja2.ext.Extension):
    """Transformers' AssistantTracker without the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(now).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, template, context):
    ctx = dict(context)
    messages = ctx.pop("messages", [])
    tools = ctx.pop("tools", None)
    add_generation_prompt = ctx.pop("add_generation_prompt", False)
    compiled = env.from_string(template)
    return compiled.render(messages=messages, tools=tools, documents=None,
                           add_generation_prompt=add_generation_prompt, **ctx)


def main():
    cases_path = sys.argv[1]
    with open(cases_path, encoding="utf-8") as f:
        spec = json.load(f)
    folder = cases_path.rsplit("/", 1)[0]
    env = make_env(spec["now"])
    out = {}
    for name, tokens in spec["templates"].items():
        with open(folder + "/" + name, encoding="utf-8", newline="") as f:
            template = f.read()
        for case in spec["cases"]:
            for agp in (True, False):
                # Keyword arguments win over the special tokens, as in apply_chat_template.
                context = dict(tokens)
                context.update(case.get("kwargs", {}))
                context.update(messages=case["messages"], tools=case.get("tools"),
                               add_generation_prompt=agp)
                key = "%s|%s|%s" % (name, case["name"], "true" if agp else "false")
                try:
                    out[key] = {"output": render(env, template, context)}
                except Exception as e:  # the test checks that we fail where Jinja2 fails
                    out[key] = {"error": "%s: %s" % (type(e).__name__, e)}
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
