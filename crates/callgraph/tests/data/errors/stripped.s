	.text
	.globl _start
_start:
	.skip 32
