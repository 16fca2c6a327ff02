	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "work39"
	.type "work39",@function
"work39":
	.globl "a_b37"
"a_b37":
	.skip 127, 0x90
	.globl "a_b11$y"
	.type "a_b11$y",@function
"a_b11$y":
	.skip 286, 0x90
	.type "f",@object
"f":
	.skip 5, 0x90
	.type "x1",@function
"x1":
	.skip 107, 0x90
	.globl "zz17"
	.type "zz17",@function
"zz17":
	.skip 1, 0x90
"_":
	.skip 32, 0x90
	.type "mcount",@object
"mcount":
	.skip 4, 0x90
"zz":
	.skip 57, 0x90
	.weak "a_b"
	.type "a_b",@function
"a_b":
	.skip 1, 0x90
"_h":
	.skip 388, 0x90
	.globl "g"
	.type "g",@function
"g":
	.skip 30, 0x90
"zz21":
	.skip 36, 0x90
	.type "x110",@gnu_indirect_function
"x110":
	.skip 3, 0x90
"work.2.3":
	.skip 5, 0x90
	.skip 4212, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
	.section mysec,"ax",@progbits
	.globl "__k"
	.type "__k",@function
"__k":
	.skip 24
	.type "a_b30",@function
"a_b30":
	.skip 11
	.data
	.globl gdata
gdata:
	.long 1
ldata:
	.long 2
	.weak wobj
	.type wobj,@object
wobj:
	.long 3
	.globl absx
	.set absx, 0x401033
	.set labs, 0x40102c
	.weak wabs
	.set wabs, 0x4010de
