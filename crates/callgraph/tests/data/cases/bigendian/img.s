	.text
	.globl _start
_start:
	.skip 16
	.globl f0
	.type f0,@function
f0:
	.skip 16
	.globl f1
	.type f1,@function
f1:
	.skip 16
	.globl f2
	.type f2,@function
f2:
	.skip 16
	.globl f3
	.type f3,@function
f3:
	.skip 16
	.globl zend
	.type zend,@function
zend:
	.skip 16
	.data
	.globl gdata
gdata:
	.long 1
