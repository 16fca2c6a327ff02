	.text
	.globl _start
_start:
	.skip 16, 0x90
	.globl "x1"
	.type "x1",@function
"x1":
	.skip 347, 0x90
	.type "x127",@object
"x127":
	.skip 52, 0x90
"zz26":
	.skip 387, 0x90
	.globl "g"
"g":
	.skip 166, 0x90
"_.":
	.skip 7, 0x90
	.globl "__k21"
"__k21":
	.skip 41, 0x90
	.type "_15.constprop.0",@function
"_15.constprop.0":
	.skip 8, 0x90
	.type "_",@function
"_":
	.skip 42, 0x90
	.globl "main38"
	.type "main38",@function
"main38":
	.skip 3, 0x90
	.weak "main27"
	.type "main27",@function
"main27":
	.skip 223, 0x90
"zz":
	.skip 57, 0x90
	.weak "a_b"
	.type "a_b",@function
"a_b":
	.type "__k6",@function
"__k6":
	.skip 264, 0x90
	.globl "mcount"
	.type "mcount",@function
"mcount":
	.globl "a_b18"
"a_b18":
	.skip 9, 0x90
	.type "__k.constprop.4",@object
"__k.constprop.4":
	.skip 36, 0x90
	.weak "_h19"
	.type "_h19",@function
"_h19":
	.skip 23, 0x90
	.globl "__k3"
"__k3":
	.globl "_h"
	.type "_h",@function
"_h":
	.skip 3, 0x90
"_11":
	.skip 39, 0x90
	.globl "a_b4"
	.type "a_b4",@function
"a_b4":
	.skip 2, 0x90
	.type "g1$x",@function
"g1$x":
	.skip 13, 0x90
	.globl "main"
	.type "main",@function
"main":
	.skip 1, 0x90
	.globl "main25"
	.type "main25",@function
"main25":
	.skip 13, 0x90
	.weak "__k24"
	.type "__k24",@function
"__k24":
	.skip 111, 0x90
	.globl "main.cold"
"main.cold":
	.skip 3, 0x90
	.globl "x13"
"x13":
	.skip 356, 0x90
	.type "g29",@function
"g29":
	.skip 279, 0x90
	.skip 7018, 0x90
	.globl zz_sentinel
	.type zz_sentinel,@function
zz_sentinel:
	.skip 16, 0x90
	.section mysec,"ax",@progbits
	.type "__k9.2.3",@function
"__k9.2.3":
	.skip 37
	.globl "main20"
	.type "main20",@function
"main20":
	.skip 3
	.globl "x124.1"
	.type "x124.1",@function
"x124.1":
	.skip 39
	.data
	.weak data_start
data_start:
	.long 0
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
	.set absx, 0x401038
	.set labs, 0x40101b
