"""`extract doctor`'s two sides of a profile, each read once: what its SQL tables say
(`read_sql`, `SqlSide`) and what pva says (`PvaSide`). The checks (doctorchecks.py)
compare them.

Costs: the SQL side reads the small tables whole and makes one grouped pass over
`steps_by_ipu` and one over `vars_info`; the pva side reads each program and compute set
the trace uses (names, vertex types, code bytes), and `computeSets` twice (to see
whether it is one object).
"""

import time
from typing import Any, Dict, List, NamedTuple, Optional

from ..core.profile import EXCHANGE_CODE_CATEGORY, Profile
from ..core.pvafacts import as_int
from ..core.sqlitefile import SQL_ERRORS


class SqlSide(NamedTuple):
    """What the profile's tables say, read once."""

    program_names: dict  # programs.id -> name (as extract reads it)
    compute_set_names: dict  # compute_sets.compute_set -> name
    program_stats: tuple  # (rows, min(id), max(id)) of programs
    step_programs: list  # distinct (program, type) of steps with a program, by program
    on_tile_pairs: list  # distinct (program, compute_set) of OnTileExecute steps
    rows_per_step: list  # [(rows a step has in steps_by_ipu, steps with that many)]
    vars_info: tuple  # (rows, distinct tiles, internalExchangeCode rows)


def read_sql(path) -> SqlSide:
    """The SQL side of the checks. ProfileError (one line) for a file extract cannot
    read, as `extract` itself gives."""
    with Profile(path) as profile:
        program_names, compute_set_names = profile.names()
        db = profile.db
        try:
            program_stats = tuple(
                db.execute("SELECT count(*), min(id), max(id) FROM programs").fetchone()
            )
            step_programs = db.execute(
                "SELECT DISTINCT program, CAST(type AS TEXT) FROM steps "
                "WHERE program IS NOT NULL ORDER BY program"
            ).fetchall()
            on_tile = db.execute(
                "SELECT DISTINCT program, compute_set FROM steps WHERE type = "
                "'OnTileExecute' AND program IS NOT NULL AND compute_set IS NOT NULL "
                "ORDER BY program, compute_set"
            ).fetchall()
            rows_per_step = db.execute(
                "SELECT n, count(*) FROM (SELECT count(*) AS n FROM steps_by_ipu "
                "GROUP BY step_id) GROUP BY n ORDER BY n"
            ).fetchall()
            categories = [
                row[0]
                for row in db.execute(
                    "SELECT id FROM var_categories WHERE name = ?", (EXCHANGE_CODE_CATEGORY,)
                )
            ]
            marks = ", ".join("?" * len(categories)) or "NULL"
            vars_info = tuple(
                db.execute(
                    "SELECT count(*), count(DISTINCT tile), coalesce(sum(category IN ({})), 0) "
                    "FROM vars_info".format(marks),
                    categories,
                ).fetchone()
            )
        except SQL_ERRORS as exc:
            raise profile.error(exc) from exc
    return SqlSide(
        program_names,
        compute_set_names,
        program_stats,
        step_programs,
        on_tile,
        rows_per_step,
        vars_info,
    )


class PvaSide:
    """One report opened with pva, kept referenced while its parts are used; programs
    and compute sets are each read once (`computeSets` a second time only by
    check_compute_sets_access)."""

    def __init__(self, pva, path):
        self.pva = pva
        self.report = pva.openReport(str(path))  # pybind11: a str, never a Path
        self.compilation = self.report.compilation
        self._programs: Optional[dict] = None
        self._order: List[int] = []
        self._compute_sets = None
        self.compute_sets_seconds: Optional[float] = None

    def programs(self) -> dict:
        """{id (a Python int): program}, read once; repeated ids keep the first, and
        `program_order` keeps every id as pva gave it."""
        if self._programs is None:
            found: Dict[int, Any] = {}
            for program in self.compilation.programs:
                key = as_int(program._id)
                self._order.append(key)
                found.setdefault(key, program)
            self._programs = found
        return self._programs

    @property
    def program_order(self) -> List[int]:
        self.programs()
        return self._order

    def compute_sets(self):
        if self._compute_sets is None:
            start = time.perf_counter()
            self._compute_sets = self.compilation.computeSets
            self.compute_sets_seconds = time.perf_counter() - start
        return self._compute_sets

    def compute_set(self, index):
        """computeSets[index], or None when pva has no such index."""
        if type(index) is not int or index < 0:
            return None
        try:
            return self.compute_sets()[index]
        except (IndexError, KeyError):
            return None

    def is_type(self, program, type_name: str) -> bool:
        return program.type == getattr(self.pva.Program.Type, type_name)
