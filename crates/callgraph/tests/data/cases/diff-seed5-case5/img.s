	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "mcount"
	.type "mcount",@function
"mcount":
	.type "g",@function
"g":
	.skip 261, 0x90
	.globl "g36"
	.type "g36",@function
"g36":
	.globl "main11"
"main11":
	.skip 3, 0x90
	.globl "g29"
"g29":
	.skip 5, 0x90
	.globl "_h"
"_h":
	.skip 8, 0x90
	.globl "work"
	.type "work",@function
"work":
	.skip 4, 0x90
	.type "work4",@function
"work4":
	.skip 152, 0x90
	.globl "a_b.1"
	.type "a_b.1",@function
"a_b.1":
	.skip 10, 0x90
	.weak "x15$y"
	.type "x15$y",@function
"x15$y":
	.skip 3, 0x90
	.globl "_16"
"_16":
	.skip 4, 0x90
	.globl "__k17"
	.type "__k17",@function
"__k17":
	.skip 26, 0x90
"x10":
	.skip 11, 0x90
"_h38$y":
	.skip 215, 0x90
	.skip 3452, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
	.section mysec,"ax",@progbits
	.globl "zz17"
	.type "zz17",@function
"zz17":
	.skip 37
	.type "f5",@function
"f5":
	.skip 23
