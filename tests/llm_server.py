"""A small OpenAI-compatible chat server on 127.0.0.1 for testing ``multi_query`` and ``hyde``.

It speaks the real wire protocol (``POST /v1/chat/completions``, JSON in and out) and answers
deterministically from the prompt: reformulation requests get the question's content words
reordered and its abbreviations spelled out from ``EXPANSIONS``; passage requests get a sentence
built from the question; JSON-mode requests (ragas through instructor) get a small instance of the
JSON schema their system message carries. Every request body is recorded; ``fail_first`` answers 503 first, to
exercise the client's retries.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXPANSIONS = {"DVCS": "deeply virtual Compton scattering", "BSA": "beam-spin asymmetry"}


def schema_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A small valid instance of a JSON schema (what a JSON-mode model must return)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return schema_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return schema_instance(schema[key][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "object":
        return {name: schema_instance(sub, defs) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [schema_instance(schema.get("items", {"type": "string"}), defs)]
    simple = {"string": "The measured amplitude is -0.23.", "integer": 1, "number": 1.0, "boolean": True}
    return simple.get(kind)


def json_reply(messages: list[dict[str, str]]) -> str:
    """Reply to an instructor JSON-mode request: an instance of the schema in its system message."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    start = system.index("{")
    schema, _ = json.JSONDecoder().raw_decode(system[start:])
    return json.dumps(schema_instance(schema))


def reply_for(prompt: str) -> str:
    if "Write one question that this passage answers" in prompt:  # GPL-style pseudo-question
        passage = prompt.split("Passage:", 1)[1].split("\n\n", 1)[0]
        return f"Q: What does the study report about {' '.join(passage.split()[1:7])}?"
    question = prompt.rsplit("Question:", 1)[-1].strip()
    words = re.findall(r"[A-Za-z0-9/^_+-]+", question)
    spelled = " ".join(EXPANSIONS.get(w, w) for w in words)
    if "search queries" in prompt:
        n = int(re.search(r"Write (\d+)", prompt).group(1))
        variants = [spelled, " ".join(reversed(words)), " ".join(w for w in words if len(w) > 3)]
        return "\n".join(f"{i}. {v}" for i, v in enumerate(variants[:n], start=1))
    return f"We report a measurement of {spelled}. The result agrees with theory."


class LLMServer:
    """Context manager running the server in a thread; ``url`` is its OpenAI base URL."""

    def __init__(self, fail_first: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_first = fail_first
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                elif outer.fail_first > 0:
                    outer.fail_first -= 1
                    self._send(503, {"error": {"message": "busy"}})
                else:
                    if body.get("response_format", {}).get("type") == "json_object":
                        content = json_reply(body["messages"])
                    else:
                        content = reply_for(body["messages"][-1]["content"])
                    self._send(
                        200,
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "model": body["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content},
                                }
                            ],
                        },
                    )

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> LLMServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
