	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "work18"
	.type "work18",@function
"work18":
	.skip 6, 0x90
	.globl "g"
	.type "g",@function
"g":
	.skip 19, 0x90
	.globl "f"
	.type "f",@function
"f":
	.skip 389, 0x90
	.globl "_31.constprop.4"
	.type "_31.constprop.4",@function
"_31.constprop.4":
	.skip 1, 0x90
	.weak "_h17"
	.type "_h17",@function
"_h17":
	.skip 305, 0x90
	.globl "_39"
	.type "_39",@function
"_39":
	.skip 2, 0x90
	.type "g22.constprop.1.3",@function
"g22.constprop.1.3":
	.skip 140, 0x90
	.globl "a_b25"
"a_b25":
	.skip 2, 0x90
"work13":
	.skip 56, 0x90
	.type "_h",@function
"_h":
	.skip 4, 0x90
	.type "work22",@function
"work22":
	.skip 4, 0x90
	.type "x113",@object
"x113":
	.skip 14, 0x90
	.globl "zz3"
"zz3":
	.skip 2, 0x90
	.globl "_h14"
	.type "_h14",@function
"_h14":
	.skip 2, 0x90
	.type "g34",@function
"g34":
	.skip 2, 0x90
"work21":
	.type "x1",@function
"x1":
	.skip 34, 0x90
	.type "zz",@function
"zz":
	.skip 5, 0x90
"_35":
	.type "work",@function
"work":
	.skip 34, 0x90
	.globl "x111"
"x111":
	.skip 24, 0x90
	.globl "work17"
	.type "work17",@function
"work17":
	.skip 39, 0x90
"main6":
	.type "a_b28.",@function
"a_b28.":
	.skip 15, 0x90
	.globl "_"
	.type "_",@function
"_":
	.skip 2, 0x90
	.globl "work0"
	.type "work0",@function
"work0":
	.skip 13, 0x90
	.weak "_34"
	.type "_34",@function
"_34":
	.skip 58, 0x90
	.weak "_h16"
	.type "_h16",@function
"_h16":
	.skip 3, 0x90
	.skip 4398, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
