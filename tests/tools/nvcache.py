"""The machine code the NVIDIA driver made of our Vulkan pipelines, from its shader disk cache.

    python3 tests/tools/nvcache.py CACHE_DIR OUT_DIR [NVDISASM]

`knudsen vk-stats` gives the driver's counts (registers, code size) but not the instructions.
The driver keeps each compiled pipeline in its disk cache (`__GL_SHADER_DISK_CACHE_PATH`,
`tests/device/vk_sass.sh`): a `.toc` file (a 0x20-byte header "CDVN", then 0x18-byte entries
whose words 4 and 5 are an offset into the `.bin` file and a section's size) beside a `.bin`
file whose sections start with a 0x24-byte header (magic 0x9846A19D; word 7 the section's
size, counted from offset 0x20, so the packed object after the header is that size less 4
bytes; word 8 its unpacked size) followed by the packed object: zstd (magic 28 b5 2f fd) in
current drivers, or stored as is. An unpacked object that starts with "NVuc" (after a prefix
of "NVVM" or, in the 580 drivers, "NVDANVVM") is a microcode archive that nvdisasm reads
directly; the others are small ELF images of the driver's own. Each goes to
OUT_DIR/objNNN.nvuc (or .bin) and, disassembled, to objNNN.sass; the instruction mix of each is
printed, and the object with the most MUFU.EX2 (the sweep's, one per cell) is named.
"""
import collections
import pathlib
import re
import struct
import subprocess
import sys


def unzstd(packed, size):
    try:
        import zstandard
        return zstandard.ZstdDecompressor().decompress(packed, max_output_size=size)
    except ImportError:
        pass
    try:
        return subprocess.run(["zstd", "-d", "-c"], input=packed, capture_output=True, check=True).stdout
    except FileNotFoundError:
        # The device machine has neither; its copied cache files are unpacked elsewhere.
        raise SystemExit("no zstd decoder here (pip install zstandard, or the zstd program): "
                         "unpack the copied cache files on another machine")


def objects(toc_path):
    toc = toc_path.read_bytes()
    bin_ = toc_path.with_suffix(".bin").read_bytes()
    if toc[:4] != b"CDVN" or (len(toc) - 0x20) % 0x18:
        raise SystemExit(f"{toc_path}: not a driver cache table (magic {toc[:4]!r}, {len(toc)} B)")
    for e in range((len(toc) - 0x20) // 0x18):
        off, size = struct.unpack_from("<II", toc, 0x20 + e * 0x18 + 0x10)
        if off + 0x20 + size > len(bin_) or size < 4:
            print(f"  {toc_path.name} entry {e}: section at {off} of {size} B lies outside the {len(bin_)} B .bin")
            continue
        hdr = struct.unpack_from("<9I", bin_, off)
        if hdr[0] != 0x9846A19D or hdr[7] != size:
            print(f"  {toc_path.name} entry {e}: unexpected section header {hdr[0]:#x}, size {hdr[7]} against {size}")
            continue
        packed = bin_[off + 0x24:off + 0x20 + size]
        try:
            data = unzstd(packed, hdr[8]) if packed[:4] == b"\x28\xb5\x2f\xfd" else packed
        except Exception as err:  # zstandard.ZstdError, CalledProcessError: this entry only
            print(f"  {toc_path.name} entry {e}: cannot unpack: {err}")
            continue
        if len(data) != hdr[8]:
            print(f"  {toc_path.name} entry {e}: unpacked {len(data)} B where the header says {hdr[8]} B")
        at = data.find(b"NVuc", 0, 16)
        if at > 0:
            data = data[at:]
        yield e, data


def mix(text):
    ops = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.EX2)?)", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    nvdisasm = sys.argv[3] if len(sys.argv) > 3 else "nvdisasm"
    dst.mkdir(parents=True, exist_ok=True)
    tocs = sorted(src.rglob("*.toc"))
    if not tocs:
        raise SystemExit(f"no .toc file under {src}: did the run fill the cache?")
    n, sweep = 0, (0, None)
    for toc in tocs:
        for e, data in objects(toc):
            out = dst / f"obj{n:03d}.{'nvuc' if data[:4] == b'NVuc' else 'bin'}"
            out.write_bytes(data)
            print(f"{toc.name} entry {e}: {len(data)} B, head {data[:8]!r} -> {out.name}")
            n += 1
            if out.suffix != ".nvuc":
                continue
            try:
                r = subprocess.run([nvdisasm, "-c", str(out)], capture_output=True, text=True)
            except FileNotFoundError:
                raise SystemExit(f"{nvdisasm}: not found (give its path as the third argument)")
            if r.returncode != 0:
                print(f"  nvdisasm: rc {r.returncode}: {r.stderr.strip()[:300]}")
                continue
            out.with_suffix(".sass").write_text(r.stdout)
            ops = mix(r.stdout)
            print(f"  {sum(ops.values())} instructions: " + ", ".join(f"{k} {v}" for k, v in ops.most_common(30)))
            sweep = max(sweep, (ops["MUFU.EX2"], out.name), key=lambda t: t[0])
    if sweep[1]:
        print(f"the object with the most MUFU.EX2 ({sweep[0]}): {sweep[1]}")


if __name__ == "__main__":
    main()
