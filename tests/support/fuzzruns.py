"""How the subprocess fuzz layers run under hypothesis (tests/test_fuzz_derived.py,
tests/test_fuzz_diff_trace.py), read from environment variables named by a prefix:

- `PREFIX_EXAMPLES`: examples per property; when set, a long run (random instead of
  derandomized), else `default` examples, the same every time;
- `PREFIX_SEED`: the seed of a long run, so that it can be repeated;
- `PREFIX_SHRINK`: shrink a failure (else it is reported as drawn: a shrink reruns the
  command, and one that meets a hang waits out each time limit).
"""

import os

from hypothesis import HealthCheck, Phase, seed, settings


class FuzzRuns:
    def __init__(self, prefix: str, default: int):
        self.long = prefix + "_EXAMPLES" in os.environ
        self.examples = int(os.environ.get(prefix + "_EXAMPLES", str(default)))
        self._seed = os.environ.get(prefix + "_SEED")
        phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
        self.settings = settings(
            max_examples=self.examples,
            deadline=None,
            derandomize=not self.long,
            database=None,
            phases=phases + ([Phase.shrink] if os.environ.get(prefix + "_SHRINK") else []),
            print_blob=False,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.function_scoped_fixture,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
            ],
        )

    def seeded(self, test):
        """`test` with the long run's seed, if one is given."""
        return seed(int(self._seed))(test) if self._seed else test
