"""Renders chat templates with Python's jinja2 as Hugging Face's
transformers sets it up (`_compile_jinja_template`: a sandboxed environment
with trim_blocks, lstrip_blocks and loop controls, `raise_exception`, and
`tojson` as json.dumps without ASCII escapes), the reference that
tests/chat.rs checks mcscore's rendering against byte for byte.

One deliberate difference from transformers: no `strftime_now`, which mcscore
leaves undefined too, so that a prompt does not change with the day it is
rendered (templates that use it fall back to their own fixed date).

Reads a JSON list of requests on stdin, each {"template": PATH, "messages":
[...], "add_generation_prompt": bool, "bos_token": str, "eos_token": str},
and writes a JSON list of the rendered strings (or {"error": ...}) on stdout.
"""

import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def main():
    env = environment()
    out = []
    for request in json.load(sys.stdin):
        with open(request["template"], encoding="utf-8") as f:
            template = env.from_string(f.read())
        try:
            out.append(template.render(
                messages=request["messages"],
                tools=None,
                documents=None,
                add_generation_prompt=request["add_generation_prompt"],
                bos_token=request["bos_token"],
                eos_token=request["eos_token"],
                enable_thinking=False,
            ))
        except jinja2.exceptions.TemplateError as e:
            out.append({"error": str(e)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
