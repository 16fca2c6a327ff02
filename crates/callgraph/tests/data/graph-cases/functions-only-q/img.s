	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "work"
	.type "work",@function
"work":
	.skip 60, 0x90
	.type "f20",@gnu_indirect_function
"f20":
	.skip 1, 0x90
	.type "main7.constprop.0",@function
"main7.constprop.0":
	.skip 3, 0x90
	.globl "a_b22"
	.type "a_b22",@function
"a_b22":
	.skip 4, 0x90
	.type "f4",@gnu_indirect_function
"f4":
	.skip 368, 0x90
	.type "__k15",@object
"__k15":
	.skip 346, 0x90
"main13":
	.skip 1, 0x90
	.type "g10",@function
"g10":
	.skip 1, 0x90
	.globl "f12"
	.type "f12",@function
"f12":
	.skip 1, 0x90
	.type "main10",@function
"main10":
	.type "a_b7",@function
"a_b7":
	.skip 2, 0x90
	.globl "zz20"
	.type "zz20",@function
"zz20":
	.type "g",@function
"g":
	.skip 397, 0x90
	.globl "_h21"
	.type "_h21",@function
"_h21":
	.skip 4, 0x90
	.globl "work33"
	.type "work33",@function
"work33":
	.skip 2, 0x90
	.type "_20",@function
"_20":
	.skip 10, 0x90
	.globl "x18.1"
	.type "x18.1",@function
"x18.1":
	.skip 1, 0x90
"_h29":
	.type "g9",@function
"g9":
	.skip 261, 0x90
	.type "x119",@function
"x119":
	.skip 4, 0x90
	.type "x116",@object
"x116":
	.skip 11, 0x90
	.type "main",@gnu_indirect_function
"main":
	.skip 56, 0x90
	.globl "f"
	.type "f",@function
"f":
	.skip 4, 0x90
	.type "main33",@object
"main33":
	.skip 22, 0x90
	.type "work16",@gnu_indirect_function
"work16":
	.skip 10, 0x90
"x132":
	.skip 30, 0x90
	.globl "_h4"
"_h4":
	.skip 11, 0x90
	.skip 5268, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
