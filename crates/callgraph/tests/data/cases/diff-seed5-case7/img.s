	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "work34"
	.type "work34",@function
"work34":
	.skip 3, 0x90
	.globl "_h32"
"_h32":
	.globl "_h26.2.3"
	.type "_h26.2.3",@function
"_h26.2.3":
	.skip 3, 0x90
	.weak "work33"
	.type "work33",@function
"work33":
	.skip 244, 0x90
	.globl "g3"
"g3":
	.type "__k",@function
"__k":
	.skip 76, 0x90
	.type "work",@function
"work":
	.skip 305, 0x90
	.type "g15",@function
"g15":
	.skip 4, 0x90
	.globl "main"
	.type "main",@function
"main":
	.skip 4, 0x90
	.globl "_h"
	.type "_h",@function
"_h":
	.skip 1, 0x90
	.globl "_h26"
	.type "_h26",@function
"_h26":
	.skip 2, 0x90
	.globl "_28"
"_28":
	.skip 336, 0x90
	.weak "mcount"
	.type "mcount",@function
"mcount":
	.skip 3, 0x90
	.globl "a_b25"
	.type "a_b25",@function
"a_b25":
	.skip 61, 0x90
	.globl "a_b"
	.type "a_b",@function
"a_b":
	.type "f26",@function
"f26":
	.skip 103, 0x90
	.weak "work14"
	.type "work14",@function
"work14":
	.skip 29, 0x90
	.weak "g"
	.type "g",@function
"g":
	.type "x1",@function
"x1":
	.skip 24, 0x90
	.globl "zz32"
	.type "zz32",@function
"zz32":
	.skip 90, 0x90
	.globl "f"
	.type "f",@function
"f":
	.skip 5, 0x90
	.globl "main4"
	.type "main4",@function
"main4":
	.skip 1, 0x90
	.globl "f3"
	.type "f3",@function
"f3":
	.skip 241, 0x90
	.skip 5118, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
