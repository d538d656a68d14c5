"""test_philox_reference.py: Philox4x32-10 written here from the paper
(Salmon et al., SC 2011: ten rounds of two 32 x 32 -> 64-bit products,
multipliers 0xD2511F53 and 0xCD9E8D57, the key bumped by 0x9E3779B9 and
0xBB67AE85), independently of the library's C, checked against Random123's
published known answers, then against libnmt's nmt_cpu_philox on random
counters and keys. --print writes the sampling vectors test_philox.c embeds
(counter (step, sample, line key low, line key high), key the seed)."""

import ctypes
import os
import random
import sys

MASK = 0xFFFFFFFF
PUBLISHED = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((MASK,) * 4, (MASK, MASK), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def philox(counter, key):
    x, k = list(counter), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & MASK, (k[1] + 0xBB67AE85) & MASK]
        p0, p1 = 0xD2511F53 * x[0], 0xCD9E8D57 * x[2]
        x = [(p1 >> 32) ^ x[1] ^ k[0], p1 & MASK, (p0 >> 32) ^ x[3] ^ k[1], p0 & MASK]
    return tuple(x)


def sampling_block(seed, line_key, sample, step):
    counter = (step & MASK, sample & MASK, line_key & MASK, line_key >> 32)
    return philox(counter, (seed & MASK, seed >> 32))


def uniform(block):
    return ((block[0] >> 5) * 67108864 + (block[1] >> 6)) / 9007199254740992.0


def library():
    build = os.environ.get("NMT_BINARY_DIR", os.path.join(os.path.dirname(__file__), "..",
                                                          "..", "build"))
    return ctypes.CDLL(os.path.join(build, "libnmt.so"))


def main():
    for counter, key, out in PUBLISHED:
        assert philox(counter, key) == out, (counter, key)
    if "--print" in sys.argv:
        for seed, line, sample, step in [(0, 0, 0, 1), (0x0123456789abcdef, 42, 3, 7),
                                         (5, 0xfedcba9876543210, 255, 1000)]:
            block = sampling_block(seed, line, sample, step)
            print(seed, line, sample, step, [hex(v) for v in block], repr(uniform(block)))
        return 0
    lib = library()
    lib.nmt_cpu_philox.restype = None
    lib.nmt_cpu_philox.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_uint32),
                                   ctypes.POINTER(ctypes.c_uint32),
                                   ctypes.POINTER(ctypes.c_uint32)]
    rng = random.Random(int(os.environ.get("NMT_TEST_SEED", "42")))
    n = 500
    for _ in range(4):
        key = (rng.getrandbits(32), rng.getrandbits(32))
        counters = [rng.getrandbits(32) for _ in range(4 * n)]
        c_counters = (ctypes.c_uint32 * (4 * n))(*counters)
        c_key = (ctypes.c_uint32 * 2)(*key)
        c_out = (ctypes.c_uint32 * (4 * n))()
        lib.nmt_cpu_philox(n, c_counters, c_key, c_out)
        for i in range(n):
            want = philox(counters[4 * i:4 * i + 4], key)
            got = tuple(c_out[4 * i:4 * i + 4])
            assert got == want, (i, got, want)
    print("test_philox_reference: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
