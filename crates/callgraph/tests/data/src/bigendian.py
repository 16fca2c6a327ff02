#!/usr/bin/env python3
"""Writes a big-endian x86-64 image and its gmon.out into the directory given as argument.

No big-endian toolchain is at hand, so a little-endian `gcc -nostdlib` image is rewritten with
big-endian ELF headers, program and section headers, and symbol table; code bytes do not
matter to gprof. GNU gprof reads gmon files in the image's byte order, so gmon.out is written
big-endian too: one histogram (one sample per 2-byte bin) and one arc f0 -> f1 (5 calls)."""
import os
import struct
import subprocess
import sys

out = sys.argv[1]
k = 4
asm = "\t.text\n\t.globl _start\n_start:\n\t.skip 16\n"
for i in range(k):
    asm += f"\t.globl f{i}\n\t.type f{i},@function\nf{i}:\n\t.skip 16\n"
asm += "\t.globl zend\n\t.type zend,@function\nzend:\n\t.skip 16\n"
asm += "\t.data\n\t.globl gdata\ngdata:\n\t.long 1\n"
with open(os.path.join(out, "img.s"), "w") as f:
    f.write(asm)
little = os.path.join(out, "img-le")
subprocess.check_call(["gcc", "-nostdlib", "-static", "-no-pie", "-Wl,--build-id=none",
                       "-o", little, os.path.join(out, "img.s")])

d = bytearray(open(little, "rb").read())
os.remove(little)
header = "16sHHIQQQIHHHHHH"
h = struct.unpack_from("<" + header, d, 0)
struct.pack_into(">" + header, d, 0, *h)
d[5] = 2  # EI_DATA = ELFDATA2MSB
phoff, shoff, phentsize, phnum, shentsize, shnum = h[5], h[6], h[9], h[10], h[11], h[12]
for i in range(phnum):
    o = phoff + i * phentsize
    struct.pack_into(">IIQQQQQQ", d, o, *struct.unpack_from("<IIQQQQQQ", d, o))
sections = []
for i in range(shnum):
    o = shoff + i * shentsize
    s = struct.unpack_from("<IIQQQQIIQQ", d, o)
    sections.append(s)
    struct.pack_into(">IIQQQQIIQQ", d, o, *s)
for s in sections:
    if s[1] == 2:  # SHT_SYMTAB
        for j in range(s[5] // 24):
            o = s[4] + 24 * j
            struct.pack_into(">IBBHQQ", d, o, *struct.unpack_from("<IBBHQQ", d, o))
with open(os.path.join(out, "img"), "wb") as f:
    f.write(d)

low = 0x401000
n = 8 * (k + 2)
g = b"gmon" + struct.pack(">I", 1) + b"\0" * 12
g += bytes([0]) + struct.pack(">QQII", low, low + 2 * n, n, 100) + b"seconds".ljust(15, b"\0") + b"s"
g += struct.pack(">%dH" % n, *([1] * n))
g += bytes([1]) + struct.pack(">QQI", 0x401012, 0x401024, 5)
with open(os.path.join(out, "gmon.out"), "wb") as f:
    f.write(g)
