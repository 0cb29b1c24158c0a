"""The baseline: the recording that compare and report measure every change against, by
one rule for both commands.

- Named (`extract report --baseline LABEL`): the recording with that label, or the one
  recording whose label holds LABEL as a run of whole folder names (`golden` for
  `golden/inference`, `inference` when one label alone ends so). None or several: a usage
  error listing the candidates.
- By default: the first recording, in the order they are read (the arguments in order,
  a folder's summaries by path). A summary found in a folder argument (a batch) that has
  no first-body kernels (a compile-only profile, one no anchor matched) is passed over:
  every change against it would be against nothing. One given as a file is the baseline
  as it is: you named it. When every recording is passed over, the first is the baseline.
"""

from typing import List, NamedTuple, Optional, Sequence

from ..errors import UsageError, shown_path

#: How many labels an error lists before "...".
LISTED_LABELS = 10


class Baseline(NamedTuple):
    position: int  # the baseline's position among the recordings
    passed_over: List  # the recordings before it that have no first-body kernels


def _listed(labels: Sequence[str]) -> str:
    shown = ", ".join(labels[:LISTED_LABELS])
    return shown + (", ..." if len(labels) > LISTED_LABELS else "")


def _holds(label: str, wanted: str) -> bool:
    """Whether `wanted`'s folder names are a run of `label`'s whole folder names."""
    parts, run = label.split("/"), wanted.strip("/").split("/")
    return any(parts[start : start + len(run)] == run for start in range(len(parts)))


def named_baseline(labels: Sequence[str], wanted: str) -> int:
    """The position of the recording `wanted` names (see the module's rule)."""
    if wanted in labels:
        return list(labels).index(wanted)
    matches = [index for index, label in enumerate(labels) if _holds(label, wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UsageError(
            "--baseline {}: {} recordings are labelled so ({}): give more of the label".format(
                wanted, len(matches), _listed([labels[i] for i in matches])
            )
        )
    raise UsageError(
        "--baseline {}: no recording is labelled so (the labels: {})".format(
            wanted, _listed(list(labels))
        )
    )


def has_kernels(recording) -> bool:
    """Whether the recording's summary has first-body kernels (stage cycles)."""
    return bool(recording.summary.kernels)


def default_baseline(recordings: Sequence) -> Baseline:
    """The first recording, passing over those found in a folder that have no kernels."""
    for index, recording in enumerate(recordings):
        if recording.within is None or has_kernels(recording):
            return Baseline(index, list(recordings[:index]))
    return Baseline(0, [])


def choose_baseline(recordings: Sequence, wanted: Optional[str] = None) -> Baseline:
    """The baseline: the one `wanted` names, else the default one."""
    if wanted is not None:
        return Baseline(named_baseline([r.label for r in recordings], wanted), [])
    return default_baseline(recordings)


def passed_over_notes(recordings: Sequence, baseline: Baseline) -> List[str]:
    """A warning for each recording passed over as the baseline, naming the baseline."""
    chosen = recordings[baseline.position]
    return [
        "{}: has no first-body kernels, so it is not the baseline: changes are against {}".format(
            shown_path(recording.path), chosen.label
        )
        for recording in baseline.passed_over
    ]


def baseline_first(recordings: Sequence, baseline: Baseline) -> List:
    """The recordings with the baseline first, the others in their order."""
    index = baseline.position
    return [recordings[index]] + [r for i, r in enumerate(recordings) if i != index]
