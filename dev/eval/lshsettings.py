"""lshsettings.py: the LSH grid's settings (dev/eval/lshgrid.py): the
Setting record, the parsers of the grid's option strings, and the order the
settings and beams run in."""
from __future__ import annotations

from dataclasses import dataclass

from lshreport import SHARES

# --- settings ----------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    mode: str                  # full | lsh | top
    k: int | None = None
    u: int | None = None
    w: int | None = None
    top: int | None = None     # T: the most frequent words merged (lsh) or kept (top)
    threshold: int | None = None
    share: str | None = None   # lsh only

    @property
    def name(self) -> str:
        if self.mode == "full":
            return "full"
        if self.mode == "top":
            return f"top{self.top}"
        return f"lsh{self.k}-{self.u}-{self.w}.T{self.top}.t{self.threshold}.{self.share}"

    @property
    def kuw(self) -> str | None:
        return f"{self.k},{self.u},{self.w}" if self.mode == "lsh" else None

    def engine_options(self, seed: int = 1) -> list[str]:
        if self.mode == "lsh":
            return ["--lsh", f"{self.k},{self.u},{self.w},{self.top},{self.threshold}",
                    "--lsh-share", self.share, "--lsh-seed", str(seed)]
        if self.mode == "top":
            return ["--top-words", str(self.top)]
        return []

    def describe(self) -> str:
        if self.mode == "lsh":
            return f"lsh K,u,W={self.kuw} T={self.top} t={self.threshold} share={self.share}"
        if self.mode == "top":
            return f"top T={self.top}"
        return "full softmax"


def parse_int_list(text: str, what: str, minimum: int = 1) -> list[int]:
    """"1,2,4" -> [1, 2, 4]; duplicates dropped (first kept); errors name `what`."""
    out = []
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise ValueError(f"{what}: {part!r} is not an integer") from None
        if value < minimum:
            raise ValueError(f"{what}: {value} is below {minimum}")
        if value not in out:
            out.append(value)
    if not out:
        raise ValueError(f"{what}: empty list")
    return out


def parse_grid(text: str) -> list[tuple[int, int, int]]:
    """WTA settings "K,u,W;K,u,W;..." -> [(K, u, W), ...], in the order given.

    Checks K >= 2, u >= 1, W >= 1 and that a band code (u codes in 0..K-1)
    fits a non-negative int32: K^u < 2^31 (as the index builder,
    model/lsh_index.c; K <= the hidden size is the engine's to check). An
    entry may end with its own thresholds, "K,u,W,t1/t2" (parse_grid_thresholds):
    a count out of W bands means different things at W = 200 and 500."""
    out = []
    for part in text.replace(" ", "").split(";"):
        if not part:
            continue
        fields = part.split(",")
        if len(fields) == 4:
            fields = fields[:3]
        if len(fields) != 3:
            raise ValueError(f"grid: {part!r} is not K,u,W or K,u,W,t1/t2/...")
        try:
            k, u, w = (int(x) for x in fields)
        except ValueError:
            raise ValueError(f"grid: {part!r} is not three integers") from None
        if k < 2 or u < 1 or w < 1:
            raise ValueError(f"grid: {part!r} needs K >= 2, u >= 1, W >= 1")
        if k ** u >= 2 ** 31:
            raise ValueError(f"grid: {part!r}: K^u = {k ** u} does not fit a non-negative int32")
        if (k, u, w) not in out:
            out.append((k, u, w))
    if not out:
        raise ValueError("grid: empty")
    return out


def parse_grid_thresholds(text: str) -> dict[tuple[int, int, int], list[int]]:
    """{(K, u, W): [t, ...]} for the grid entries "K,u,W,t1/t2/..." that name
    their own thresholds (they replace --thresholds for that entry)."""
    out = {}
    for part in text.replace(" ", "").split(";"):
        fields = part.split(",")
        if len(fields) == 4:
            key = parse_grid(part)[0]
            out[key] = parse_int_list(fields[3].replace("/", ","), f"grid {part!r} thresholds")
    return out


def parse_shares(text: str) -> list[str]:
    out = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if part not in SHARES:
            raise ValueError(f"shares: {part!r} is not one of {', '.join(SHARES)}")
        if part not in out:
            out.append(part)
    if not out:
        raise ValueError("shares: empty")
    return out


def interleave(lists: list[list]) -> list:
    """Merges lists in proportion, each in its own order: item i of a list of
    n items sits at (i + 0.5) / n; ties go to the earlier list. A cut at any
    point keeps about the same fraction of every list."""
    keyed = []
    for li, items in enumerate(lists):
        for i, item in enumerate(items):
            keyed.append(((i + 0.5) / len(items), li, i, item))
    keyed.sort(key=lambda x: x[:3])
    return [x[3] for x in keyed]


def build_settings(grid, tops, thresholds, top_baseline, shares, share_settings,
                   grid_thresholds=None):
    """The settings after the full-softmax baseline, in the order they run.

    LSH: every (K,u,W) x T x t with shares[0], {K,u,W} outermost (t from
    grid_thresholds[(K,u,W)] where given, else thresholds); TOP: each T of
    top_baseline; sharing: shares[1:] on the first share_settings LSH settings
    (the first share's numbers are their counterparts)."""
    own = grid_thresholds or {}
    lsh = [Setting("lsh", k, u, w, t_top, thr, shares[0])
           for (k, u, w) in grid for t_top in tops
           for thr in own.get((k, u, w), thresholds) if thr <= w]
    top = [Setting("top", top=t) for t in top_baseline]
    share = [Setting("lsh", s.k, s.u, s.w, s.top, s.threshold, other)
             for s in lsh[:share_settings] for other in shares[1:]]
    return interleave([x for x in (lsh, top, share) if x])


def build_schedule(settings: list[Setting], beams: list[int]) -> list[tuple[Setting, int]]:
    """[(setting, beam)]: the full softmax at every beam, then each setting at every beam."""
    return ([(Setting("full"), b) for b in beams] +
            [(s, b) for s in settings for b in beams])
