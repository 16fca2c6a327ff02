	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "g1"
	.type "g1",@function
"g1":
	.skip 157, 0x90
"__k33":
	.skip 2, 0x90
	.weak "work38.cold"
	.type "work38.cold",@function
"work38.cold":
	.skip 28, 0x90
	.globl "__k14"
	.type "__k14",@function
"__k14":
	.skip 3, 0x90
	.type "work14",@function
"work14":
	.globl "_22"
"_22":
	.skip 23, 0x90
	.globl "a_b"
"a_b":
	.skip 2, 0x90
	.type "work33",@function
"work33":
	.skip 1, 0x90
	.globl "f17"
	.type "f17",@function
"f17":
	.skip 16, 0x90
	.type "work14.2.3",@object
"work14.2.3":
	.globl "x1"
	.type "x1",@function
"x1":
	.skip 17, 0x90
	.globl "x128"
"x128":
	.skip 214, 0x90
	.globl "x18"
"x18":
	.skip 16, 0x90
"__k23":
	.skip 58, 0x90
	.weak "__k15"
	.type "__k15",@function
"__k15":
	.skip 1, 0x90
	.weak "_h9.1"
	.type "_h9.1",@function
"_h9.1":
	.skip 7, 0x90
	.type "a_b16",@function
"a_b16":
	.skip 7, 0x90
	.globl "x129"
"x129":
	.skip 57, 0x90
	.globl "_18"
	.type "_18",@function
"_18":
	.skip 103, 0x90
"x11":
	.skip 39, 0x90
	.globl "zz3"
	.type "zz3",@function
"zz3":
	.skip 63, 0x90
	.type "zz10$y",@function
"zz10$y":
	.skip 84, 0x90
	.globl "f6.2.3"
	.type "f6.2.3",@function
"f6.2.3":
	.skip 3, 0x90
	.skip 3850, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
	.section mysec,"ax",@progbits
	.type "__k",@function
"__k":
	.skip 22
	.type "zz16",@function
"zz16":
	.skip 31
	.globl "_h39.1"
	.type "_h39.1",@function
"_h39.1":
	.skip 7
