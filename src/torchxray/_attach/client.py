"""The notebook's side of one rank: ``RankClient`` asks the rank's handler for what is new, over one
kept-alive HTTP connection, and says what became of the rank when it does not answer.

A refused connection means nothing listens there any more: the rank's process has ended (its
worker server ended with it). A timeout means it is slow (a long step holding the GIL, a loaded
machine): asked again at the next poll. A 403 means the token is not the job's.
"""

from __future__ import annotations

import http.client
import json
from typing import Any

from .wire import KEY

__all__ = ["Gone", "RankClient", "Refused"]

PATH = f"/handler/{KEY}"


class Refused(PermissionError):
    """The rank refused the token."""


class Gone(ConnectionError):
    """Nothing listens at the rank's address any more (its process ended)."""


class RankClient:
    """Requests to one rank's handler (not thread-safe: one request at a time)."""

    def __init__(self, rank: int, host: str, port: int, token: str, timeout: float) -> None:
        self.rank, self.host, self.port = rank, host, port
        self.token = token
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def ask(self, body: dict[str, Any]) -> Any:
        """The rank's JSON answer to ``body`` (the token added); Refused, Gone or TimeoutError."""
        data = json.dumps({**body, "token": self.token})
        for attempt in (0, 1):
            conn = self._conn or http.client.HTTPConnection(
                self.host, self.port, timeout=self.timeout
            )
            self._conn = conn
            try:
                conn.request("POST", PATH, body=data, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                text = resp.read()
            except TimeoutError:
                self.close()
                raise TimeoutError(
                    f"rank {self.rank} ({self.host}:{self.port}) did not answer within "
                    f"{self.timeout:g} s"
                ) from None
            except ConnectionRefusedError:
                self.close()
                raise Gone(
                    f"rank {self.rank}: nothing listens at {self.host}:{self.port}"
                ) from None
            except (http.client.HTTPException, OSError) as e:
                # The server closes a kept-alive connection after a while: one new one is tried.
                self.close()
                if attempt:
                    raise Gone(f"rank {self.rank} ({self.host}:{self.port}): {e}") from None
                continue
            if resp.status == 403:
                self.close()
                raise Refused(
                    f"rank {self.rank} refused the token: pass the job's token (token= or the "
                    "TORCHXRAY_TOKEN environment variable)"
                )
            if resp.status != 200:
                raise ConnectionError(
                    f"rank {self.rank} answered HTTP {resp.status}: it publishes no watch now"
                )
            return json.loads(text)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
