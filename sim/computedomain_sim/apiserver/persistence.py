"""Durable storage for ``--data-dir``: every committed change is written to SQLite before the
request is answered, and the store (objects and the resourceVersion counter) is rebuilt from it
at start.

SQLite in WAL mode gives atomic, crash-safe commits (a process crash never leaves a half
written change; ``synchronous=NORMAL`` may lose the last commits only on an OS crash or power
loss). A store that cannot be read is reported as :class:`CorruptStoreError` naming the file
and what is wrong — never silently dropped or replaced.

Used by :class:`.server.EmbeddedApiServer`: :meth:`SqlitePersistence.load` at start,
:meth:`SqlitePersistence.on_event` as a :mod:`.store` listener.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import attrs

from .store import Event, StorageKey

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    grp TEXT NOT NULL, plural TEXT NOT NULL, key TEXT NOT NULL,
    rv INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (grp, plural, key)
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class CorruptStoreError(RuntimeError):
    """The data directory's store cannot be read; the message says which file and why."""


@attrs.frozen
class Row:
    skey: StorageKey
    key: str
    rv: int
    raw: bytes


class SqlitePersistence:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            check = self._db.execute("PRAGMA quick_check").fetchone()
            if not check or check[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {check}")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            msg = (
                f"the API server store {path} is corrupt ({exc}); move it aside (or remove the "
                "data directory) to start with an empty store"
            )
            raise CorruptStoreError(msg) from exc

    def resource_version(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE name='rv'").fetchone()
        try:
            return int(row[0]) if row else 1
        except ValueError as exc:
            msg = f"the API server store {self.path} is corrupt: bad resourceVersion {row[0]!r}"
            raise CorruptStoreError(msg) from exc

    def rows(self) -> Iterator[Row]:
        """Every stored object; raises :class:`CorruptStoreError` on an unreadable row."""
        try:
            cursor = self._db.execute("SELECT grp, plural, key, rv, data FROM objects")
            for grp, plural, key, rv, data in cursor:
                raw = bytes(data)
                try:
                    json.loads(raw)
                except ValueError as exc:
                    msg = (
                        f"the API server store {self.path} is corrupt: object {grp}/{plural} "
                        f"{key} is not valid JSON ({exc})"
                    )
                    raise CorruptStoreError(msg) from exc
                yield Row((grp, plural), key, int(rv), raw)
        except sqlite3.DatabaseError as exc:
            msg = f"the API server store {self.path} is corrupt ({exc})"
            raise CorruptStoreError(msg) from exc

    def on_event(self, ev: Event) -> None:
        """Write one committed change durably (a store listener)."""
        grp, plural = ev.skey
        db = self._db
        db.execute("BEGIN")
        try:
            if ev.type == "DELETED":
                db.execute(
                    "DELETE FROM objects WHERE grp=? AND plural=? AND key=?",
                    (grp, plural, ev.new.key),
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO objects (grp, plural, key, rv, data) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (grp, plural, ev.new.key, ev.rv, ev.new.raw),
                )
            db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('rv', ?)", (str(ev.rv),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def drop(self, skey: StorageKey) -> None:
        self._db.execute("DELETE FROM objects WHERE grp=? AND plural=?", skey)

    def close(self) -> None:
        self._db.close()
