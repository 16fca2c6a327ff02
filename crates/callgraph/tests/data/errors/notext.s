	.section .code,"ax"
	.globl _start
_start:
	.skip 32
