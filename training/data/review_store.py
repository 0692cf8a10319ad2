"""The review store: one SQLite row per record (WAL), every decision committed the moment it is made.

Several reviewers at once: each decision names the version of the record the reviewer saw; when someone
else decided it in between, the decision is refused with a message instead of overwriting theirs.
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from visual_tools import data_home

from .records import Record, save_jsonl

Action = Literal["accept", "edit", "reject"]
SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY, position INTEGER NOT NULL, data TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    version INTEGER NOT NULL DEFAULT 0, tools TEXT NOT NULL, kind TEXT NOT NULL, teacher TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_status ON records (status, position);
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL, reviewer TEXT NOT NULL, action TEXT NOT NULL,
    before TEXT NOT NULL, before_status TEXT NOT NULL, version INTEGER NOT NULL, at REAL NOT NULL,
    undone INTEGER NOT NULL DEFAULT 0);
"""


class ReviewConflict(RuntimeError):
    """The record changed since the reviewer loaded it (another reviewer decided it); nothing was written."""


@dataclass
class Item:
    record: Record
    version: int


@dataclass
class Filters:
    status: str | None = "pending"
    tool: str | None = None
    kind: str | None = None
    teacher: str | None = None


class ReviewStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    @classmethod
    def default(cls) -> "ReviewStore":
        return cls(data_home() / "review.sqlite")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One short connection per operation (safe across Gradio's worker threads); commits on success."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA synchronous=FULL")  # a decision survives a crash of the app or the machine
        try:
            yield db
        finally:
            db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")  # one writer at a time: read-check-write cannot interleave
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # --- loading -----------------------------------------------------------------------------------
    def add(self, records: Iterable[Record]) -> int:
        """Insert new records (pending, in order); records already present keep their review state."""
        with self._transaction() as db:
            start = db.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM records").fetchone()[0]
            before = db.total_changes
            for offset, record in enumerate(records):
                db.execute("INSERT OR IGNORE INTO records (id, position, data, status, tools, kind, teacher) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (record.id, start + offset, record.model_dump_json(), record.status,
                            json.dumps(record.used_tools()), record.label(), record.source.teacher))
            return db.total_changes - before

    # --- reading -----------------------------------------------------------------------------------
    def _where(self, filters: Filters) -> tuple[str, list]:
        clauses, params = [], []
        for column, value in (("status", filters.status), ("kind", filters.kind), ("teacher", filters.teacher)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        if filters.tool:
            clauses.append("EXISTS (SELECT 1 FROM json_each(records.tools) WHERE value = ?)")
            params.append(filters.tool)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def get(self, record_id: str) -> Item | None:
        with self._connect() as db:
            row = db.execute("SELECT data, version FROM records WHERE id = ?", (record_id,)).fetchone()
        return Item(Record.model_validate_json(row["data"]), row["version"]) if row else None

    def next(self, filters: Filters, after: str | None = None) -> Item | None:
        """The first record matching `filters` after the record `after` (in generation order), wrapping round."""
        where, params = self._where(filters)
        with self._connect() as db:
            position = -1
            if after:
                row = db.execute("SELECT position FROM records WHERE id = ?", (after,)).fetchone()
                position = row["position"] if row else -1
            query = f"SELECT data, version FROM records{where}{' AND' if where else ' WHERE'} position > ? " \
                    "ORDER BY position LIMIT 1"
            row = db.execute(query, [*params, position]).fetchone()
            if row is None and position >= 0:
                row = db.execute(f"SELECT data, version FROM records{where} ORDER BY position LIMIT 1",
                                 params).fetchone()
        return Item(Record.model_validate_json(row["data"]), row["version"]) if row else None

    def records(self, filters: Filters = Filters(status=None)) -> list[Record]:
        where, params = self._where(filters)
        with self._connect() as db:
            rows = db.execute(f"SELECT data FROM records{where} ORDER BY position", params).fetchall()
        return [Record.model_validate_json(row["data"]) for row in rows]

    def counts(self) -> dict[str, int]:
        with self._connect() as db:
            rows = db.execute("SELECT status, COUNT(*) AS n FROM records GROUP BY status").fetchall()
        counts = {"pending": 0, "accepted": 0, "rejected": 0} | {row["status"]: row["n"] for row in rows}
        return counts | {"total": sum(counts.values())}

    def choices(self) -> dict[str, list[str]]:
        """The values the filters can take: tools used, kinds and teachers present."""
        with self._connect() as db:
            tools = [r[0] for r in db.execute("SELECT DISTINCT value FROM records, json_each(records.tools) "
                                              "ORDER BY value")]
            kinds = [r[0] for r in db.execute("SELECT DISTINCT kind FROM records ORDER BY kind")]
            teachers = [r[0] for r in db.execute("SELECT DISTINCT teacher FROM records ORDER BY teacher")]
        return {"tool": tools, "kind": kinds, "teacher": teachers}

    # --- deciding ----------------------------------------------------------------------------------
    def decide(self, record_id: str, version: int, action: Action, reviewer: str, *,
               edited: Record | None = None, reason: str = "") -> Item:
        """Accept, edit-then-accept or reject the record the reviewer saw at `version`; committed at once."""
        reviewer = reviewer.strip()
        if not reviewer:
            raise ValueError("enter your name as reviewer first")
        if action == "reject" and not reason.strip():
            raise ValueError("say why the record is rejected")
        if action == "edit" and edited is None:
            raise ValueError("an edit needs the edited record")
        with self._transaction() as db:
            row = db.execute("SELECT data, status, version FROM records WHERE id = ?", (record_id,)).fetchone()
            if row is None:
                raise KeyError(f"no record {record_id}")
            current = Record.model_validate_json(row["data"])
            if row["version"] != version:
                raise ReviewConflict(f"record {record_id} changed while you looked at it: "
                                     f"{current.reviewer or 'someone'} marked it {row['status']}. "
                                     "Reload it to see their decision; yours was not saved.")
            now = time.time()
            base = edited if action == "edit" else current
            update = {"status": "rejected" if action == "reject" else "accepted", "reviewer": reviewer,
                      "reason": reason.strip() or None, "updated_at": now, "id": current.id}
            if action == "edit":
                update["original"] = current.original or current.model_dump_json(exclude={"original"})
            new = base.model_copy(update=update)
            _replace(db, record_id, new.model_dump_json(), new.status, new)
            db.execute("INSERT INTO decisions (record_id, reviewer, action, before, before_status, version, at) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", (record_id, reviewer, action, row["data"], row["status"],
                                                        version, now))
        return Item(new, version + 1)

    def undo(self, reviewer: str) -> Item:
        """Take back this reviewer's last decision (again and again, newest first), unless someone else
        has decided that record since."""
        with self._transaction() as db:
            last = db.execute("SELECT * FROM decisions WHERE reviewer = ? AND undone = 0 ORDER BY seq DESC LIMIT 1",
                              (reviewer.strip(),)).fetchone()
            if last is None:
                raise ValueError("nothing to undo")
            row = db.execute("SELECT version FROM records WHERE id = ?", (last["record_id"],)).fetchone()
            if row["version"] != last["version"] + 1:
                raise ReviewConflict(f"record {last['record_id']} was decided again by someone else; not undone")
            before = Record.model_validate_json(last["before"])
            _replace(db, last["record_id"], last["before"], last["before_status"], before)
            db.execute("UPDATE decisions SET undone = 1 WHERE seq = ?", (last["seq"],))
        return Item(before, row["version"] + 1)

    # --- export ------------------------------------------------------------------------------------
    def export(self, path: Path, status: str | None = "accepted") -> int:
        """Write records (only `status`, or all with their status when None) as JSONL."""
        records = self.records(Filters(status=status))
        save_jsonl(records, path)
        return len(records)


def _replace(db: sqlite3.Connection, record_id: str, data: str, status: str, record: Record) -> None:
    """Write a record's new state and its filter columns; the version moves on."""
    db.execute("UPDATE records SET data = ?, status = ?, version = version + 1, tools = ?, kind = ? WHERE id = ?",
               (data, status, json.dumps(record.used_tools()), record.label(), record_id))
