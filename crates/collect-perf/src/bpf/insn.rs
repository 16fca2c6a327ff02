//! A small typed builder of eBPF instructions, so the collector's programs are written in Rust
//! (no clang, no object files): each program is a short function of this module's calls, and
//! its bytes are the same on every build (the unit tests pin them).
//!
//! The encoding is the kernel's `struct bpf_insn` (`include/uapi/linux/bpf.h`): one byte of
//! opcode, a byte holding the destination (low nibble) and source (high nibble) registers, a
//! 16-bit signed offset and a 32-bit signed immediate, little-endian. A 64-bit immediate load
//! takes two slots.

/// A BPF register. `R0` holds return values, `R1`–`R5` arguments (clobbered by calls),
/// `R6`–`R9` survive calls, `R10` is the read-only frame pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Reg {
    R0 = 0,
    R1,
    R2,
    R3,
    R4,
    R5,
    R6,
    R7,
    R8,
    R9,
    R10,
}

/// The width of a memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 1 byte (`BPF_B`).
    B,
    /// 2 bytes (`BPF_H`).
    H,
    /// 4 bytes (`BPF_W`).
    W,
    /// 8 bytes (`BPF_DW`).
    DW,
}

impl Size {
    fn code(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

/// A 64-bit arithmetic operation (`BPF_ALU64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    Div = 0x30,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Mod = 0x90,
    Xor = 0xa0,
    Mov = 0xb0,
    Arsh = 0xc0,
}

/// A jump condition (`BPF_JMP`), unsigned unless named signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ge = 0x30,
    Set = 0x40,
    Ne = 0x50,
    SGt = 0x60,
    SGe = 0x70,
    Lt = 0xa0,
    Le = 0xb0,
    SLt = 0xc0,
    SLe = 0xd0,
}

/// The kernel helpers the collector's programs call (`enum bpf_func_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Helper {
    MapLookupElem = 1,
    MapUpdateElem = 2,
    MapDeleteElem = 3,
    KtimeGetNs = 5,
    GetSmpProcessorId = 8,
    GetCurrentPidTgid = 14,
    PerfEventOutput = 25,
    GetStackid = 27,
    GetCurrentTask = 35,
    GetStack = 67,
    ProbeReadUser = 112,
    ProbeReadKernel = 113,
    RingbufOutput = 130,
    RingbufReserve = 131,
    RingbufSubmit = 132,
    RingbufDiscard = 133,
    TaskStorageGet = 156,
    GetCurrentTaskBtf = 158,
    TaskPtRegs = 175,
}

const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
const IMM: u8 = 0x00;
const SRC_X: u8 = 0x08;
/// `BPF_PSEUDO_MAP_FD`: the immediate of a 64-bit load is a map's file descriptor.
const PSEUDO_MAP_FD: u8 = 1;

/// One encoded instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// Destination register (low nibble of the second byte).
    pub dst: u8,
    /// Source register (high nibble).
    pub src: u8,
    /// Signed offset (jumps: in instructions, from the next one).
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

impl Insn {
    /// The instruction's 8 bytes, as the kernel reads them (little-endian host).
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.src << 4) | (self.dst & 0x0f);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

/// A jump target, bound to a place in the program with [`Asm::bind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

/// Which map a 64-bit load refers to: an index into the maps given at load time, whose file
/// descriptor the loader writes into the instruction (so the bytes do not depend on fds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapSlot(pub usize);

/// A finished program: its instructions and where each map's fd goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    /// The instructions, map fds left 0.
    pub insns: Vec<Insn>,
    /// (index of the first slot of a map load, map).
    pub map_loads: Vec<(usize, MapSlot)>,
}

impl Code {
    /// The program's bytes with map fds left 0: what the unit tests pin.
    pub fn bytes(&self) -> Vec<u8> {
        self.insns.iter().flat_map(|i| i.to_bytes()).collect()
    }

    /// The instruction count and an FNV-1a hash of [`Code::bytes`]: a test pins every byte
    /// of a program without a page of hex.
    #[cfg(test)]
    pub(crate) fn digest(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        format!("{} insns {h:016x}", self.insns.len())
    }
}

/// The assembler: appends instructions, resolves labels when finished.
#[derive(Debug, Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    jumps: Vec<(usize, Label)>,
    map_loads: Vec<(usize, MapSlot)>,
}

/// The registers' numbers, for the encoding.
fn r(reg: Reg) -> u8 {
    reg as u8
}

impl Asm {
    /// An empty program.
    pub fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> &mut Asm {
        self.insns.push(Insn {
            code,
            dst: r(dst),
            src: r(src),
            off,
            imm,
        });
        self
    }

    /// `dst op= imm` (64-bit).
    pub fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) -> &mut Asm {
        self.push(ALU64 | op as u8 | IMM, dst, Reg::R0, 0, imm)
    }

    /// `dst op= src` (64-bit).
    pub fn alu_reg(&mut self, op: Alu, dst: Reg, src: Reg) -> &mut Asm {
        self.push(ALU64 | op as u8 | SRC_X, dst, src, 0, 0)
    }

    /// `dst = imm` (sign-extended to 64 bits).
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Asm {
        self.alu_imm(Alu::Mov, dst, imm)
    }

    /// `dst = src`.
    pub fn mov(&mut self, dst: Reg, src: Reg) -> &mut Asm {
        self.alu_reg(Alu::Mov, dst, src)
    }

    /// `dst = imm` for a full 64-bit constant (two slots).
    pub fn ld_imm64(&mut self, dst: Reg, imm: u64) -> &mut Asm {
        self.push(
            LD | Size::DW.code() | IMM,
            dst,
            Reg::R0,
            0,
            imm as u32 as i32,
        );
        self.push(0, Reg::R0, Reg::R0, 0, (imm >> 32) as u32 as i32)
    }

    /// `dst = &map` (two slots; the loader writes the map's fd).
    pub fn ld_map(&mut self, dst: Reg, map: MapSlot) -> &mut Asm {
        self.map_loads.push((self.insns.len(), map));
        self.insns.push(Insn {
            code: LD | Size::DW.code() | IMM,
            dst: r(dst),
            src: PSEUDO_MAP_FD,
            off: 0,
            imm: 0,
        });
        self.push(0, Reg::R0, Reg::R0, 0, 0)
    }

    /// `reg = R10 + off`: a pointer into the program's stack frame, for a helper's argument.
    pub fn frame_ptr(&mut self, reg: Reg, off: i16) -> &mut Asm {
        self.mov(reg, Reg::R10)
            .alu_imm(Alu::Add, reg, i32::from(off))
    }

    /// `dst = *(size *)(src + off)`.
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Asm {
        self.push(LDX | MEM | size.code(), dst, src, off, 0)
    }

    /// `*(size *)(dst + off) = src`.
    pub fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(STX | MEM | size.code(), dst, src, off, 0)
    }

    /// For each `(from, to, size)`: `*(size *)(dst + to) = *(size *)(src + from)`, through
    /// `tmp`: a record's fields copied from one place to another.
    pub fn copy_fields(
        &mut self,
        tmp: Reg,
        src: Reg,
        dst: Reg,
        fields: &[(i16, i16, Size)],
    ) -> &mut Asm {
        for &(from, to, size) in fields {
            self.load(size, tmp, src, from).store(size, dst, to, tmp);
        }
        self
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Asm {
        self.push(ST | MEM | size.code(), dst, Reg::R0, off, imm)
    }

    /// `*(u64 *)(dst + off) += src`, atomically (`BPF_ATOMIC | BPF_ADD`).
    pub fn atomic_add(&mut self, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(STX | ATOMIC | Size::DW.code(), dst, src, off, 0)
    }

    /// `out = floor(log2(x))` (0 for `x` <= 1) by halving in six steps, no loop for the
    /// verifier: OSprof's log2 bucket of a latency. Consumes `x`; clobbers `tmp`.
    pub fn log2(&mut self, x: Reg, tmp: Reg, out: Reg) -> &mut Asm {
        self.mov_imm(out, 0);
        for s in [32, 16, 8, 4, 2, 1] {
            let skip = self.label();
            self.mov(tmp, x)
                .alu_imm(Alu::Rsh, tmp, s)
                .jmp_imm(Cond::Eq, tmp, 0, skip)
                .mov(x, tmp)
                .alu_imm(Alu::Add, out, s)
                .bind(skip);
        }
        self
    }

    /// Adds one to this CPU's `u64` in the per-CPU array `counts` at the `u32` index stored
    /// at `key` (an offset from R10); jumps to `missing` if there is no such entry.
    /// Clobbers R0 to R5.
    pub fn count_at(&mut self, counts: MapSlot, key: i16, missing: Label) -> &mut Asm {
        self.ld_map(Reg::R1, counts)
            .mov(Reg::R2, Reg::R10)
            .alu_imm(Alu::Add, Reg::R2, i32::from(key))
            .call(Helper::MapLookupElem)
            .jmp_imm(Cond::Eq, Reg::R0, 0, missing)
            .load(Size::DW, Reg::R1, Reg::R0, 0)
            .alu_imm(Alu::Add, Reg::R1, 1)
            .store(Size::DW, Reg::R0, 0, Reg::R1)
    }

    /// Calls a kernel helper: arguments in `R1`–`R5`, result in `R0`.
    pub fn call(&mut self, helper: Helper) -> &mut Asm {
        self.push(JMP | 0x80, Reg::R0, Reg::R0, 0, helper as i32)
    }

    /// `R0 = the current thread's value in task-storage map `map`, or 0`; with `flags` =
    /// [`Asm::STORAGE_CREATE`], a zeroed one is made if it has none (0 if the kernel cannot).
    /// Clobbers R1 to R5.
    pub fn current_task_value(&mut self, map: MapSlot, flags: i32) -> &mut Asm {
        self.call(Helper::GetCurrentTaskBtf)
            .mov(Reg::R2, Reg::R0)
            .ld_map(Reg::R1, map)
            .mov_imm(Reg::R3, 0)
            .mov_imm(Reg::R4, flags)
            .call(Helper::TaskStorageGet)
    }

    /// `R0 = bpf_map_update_elem(map, R10 + key, R10 + value, flags)`: the key and the value
    /// on the program's stack. Clobbers R1 to R5.
    pub fn update_elem(&mut self, map: MapSlot, key: i16, value: i16, flags: i32) -> &mut Asm {
        self.ld_map(Reg::R1, map)
            .frame_ptr(Reg::R2, key)
            .frame_ptr(Reg::R3, value)
            .mov_imm(Reg::R4, flags)
            .call(Helper::MapUpdateElem)
    }

    /// `BPF_LOCAL_STORAGE_GET_F_CREATE`: [`Asm::current_task_value`] makes a missing value.
    pub const STORAGE_CREATE: i32 = 1;

    /// Returns `R0`.
    pub fn exit(&mut self) -> &mut Asm {
        self.push(JMP | 0x90, Reg::R0, Reg::R0, 0, 0)
    }

    /// A new label, bound later.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Binds `l` to the next instruction.
    pub fn bind(&mut self, l: Label) -> &mut Asm {
        self.labels[l.0] = Some(self.insns.len());
        self
    }

    /// Jumps to `to`.
    pub fn ja(&mut self, to: Label) -> &mut Asm {
        self.jumps.push((self.insns.len(), to));
        self.push(JMP, Reg::R0, Reg::R0, 0, 0)
    }

    /// Jumps to `to` if `dst cond imm`.
    pub fn jmp_imm(&mut self, cond: Cond, dst: Reg, imm: i32, to: Label) -> &mut Asm {
        self.jumps.push((self.insns.len(), to));
        self.push(JMP | cond as u8 | IMM, dst, Reg::R0, 0, imm)
    }

    /// Jumps to `to` if `dst cond src`.
    pub fn jmp_reg(&mut self, cond: Cond, dst: Reg, src: Reg, to: Label) -> &mut Asm {
        self.jumps.push((self.insns.len(), to));
        self.push(JMP | cond as u8 | SRC_X, dst, src, 0, 0)
    }

    /// The finished program.
    ///
    /// # Panics
    /// If a label used by a jump was never bound or is out of a jump's reach: a bug in the
    /// program's builder, caught by its unit test.
    pub fn finish(mut self) -> Code {
        for (at, l) in std::mem::take(&mut self.jumps) {
            #[allow(clippy::expect_used)]
            let to = self.labels[l.0].expect("every jump's label is bound");
            #[allow(clippy::expect_used)]
            let off = i16::try_from(to as isize - at as isize - 1).expect("a jump within reach");
            self.insns[at].off = off;
        }
        Code {
            insns: self.insns,
            map_loads: self.map_loads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_encode_as_the_kernel_reads_them() {
        let mut a = Asm::new();
        let out = a.label();
        a.mov_imm(Reg::R0, 0)
            .ld_imm64(Reg::R1, 0x1122_3344_5566_7788)
            .load(Size::W, Reg::R2, Reg::R1, 8)
            .jmp_imm(Cond::Eq, Reg::R2, 0, out)
            .atomic_add(Reg::R1, 16, Reg::R2)
            .bind(out)
            .exit();
        let code = a.finish();
        let want: Vec<u8> = [
            [0xb7, 0x00, 0, 0, 0, 0, 0, 0],
            [0x18, 0x01, 0, 0, 0x88, 0x77, 0x66, 0x55],
            [0x00, 0x00, 0, 0, 0x44, 0x33, 0x22, 0x11],
            [0x61, 0x12, 8, 0, 0, 0, 0, 0],
            [0x15, 0x02, 1, 0, 0, 0, 0, 0],
            [0xdb, 0x21, 16, 0, 0, 0, 0, 0],
            [0x95, 0x00, 0, 0, 0, 0, 0, 0],
        ]
        .concat();
        assert_eq!(code.bytes(), want);
    }

    #[test]
    fn a_map_load_leaves_its_fd_to_the_loader() {
        let mut a = Asm::new();
        a.ld_map(Reg::R1, MapSlot(2)).exit();
        let code = a.finish();
        assert_eq!(code.map_loads, vec![(0, MapSlot(2))]);
        assert_eq!(&code.bytes()[..2], &[0x18, 0x11]);
    }
}
