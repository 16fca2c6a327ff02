	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "mcount"
	.type "mcount",@function
"mcount":
	.skip 28, 0x90
	.globl "_10"
	.type "_10",@function
"_10":
	.type "f34",@function
"f34":
	.skip 8, 0x90
	.type "__k",@gnu_indirect_function
"__k":
	.skip 8, 0x90
	.type "f",@gnu_indirect_function
"f":
	.skip 321, 0x90
	.weak "main"
	.type "main",@function
"main":
	.globl "f11"
"f11":
	.skip 4, 0x90
	.type "x1",@function
"x1":
	.skip 27, 0x90
	.globl "__k24"
	.type "__k24",@function
"__k24":
	.globl "_h12"
"_h12":
	.skip 1, 0x90
	.type "_1",@object
"_1":
	.skip 18, 0x90
	.skip 2878, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
