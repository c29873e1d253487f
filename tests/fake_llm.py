"""A small OpenAI-compatible chat server on 127.0.0.1 that records every request.

Each request takes the next behaviour of its script (the last one repeats):
  ("content", text)        answer with this message content
  ("status", code, body)   answer with this HTTP status and JSON body
  ("sleep", seconds, text) wait, then answer with text
  ("close",)               drop the connection without an answer
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = tuple[Any, ...]


class FakeLLM:
    def __init__(self, script: Sequence[Behaviour]) -> None:
        self.script = list(script)
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                with owner._lock:
                    owner.bodies.append(body)
                    index = min(len(owner.bodies) - 1, len(owner.script) - 1)
                    behaviour = owner.script[index]
                owner._answer(self, behaviour)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # shutdown() waits for serve_forever's next poll: at the default 0.5 s, every test that
        # starts a server waited half a second at its end.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(b) for b in self.bodies]

    def _answer(self, handler: BaseHTTPRequestHandler, behaviour: Behaviour) -> None:
        kind = behaviour[0]
        if kind == "close":
            handler.close_connection = True
            handler.connection.close()
            return
        if kind == "sleep":
            time.sleep(behaviour[1])
            behaviour = ("content", behaviour[2])
            kind = "content"
        if kind == "status":
            self._send(handler, behaviour[1], behaviour[2])
            return
        completion = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": "critic-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": behaviour[1]},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        self._send(handler, 200, completion)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: fine
            pass


@contextmanager
def fake_llm(script: Sequence[Behaviour]) -> Iterator[FakeLLM]:
    server = FakeLLM(script)
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
