use zstd_safe::{DCtx, InBuffer, OutBuffer};

/// pkgprof: most bytes one compressed record may decompress to. perf compresses one ring
/// flush at a time into records of at most 64 KiB, a few MiB each at most.
pub const MAX_DECOMPRESSED: usize = 256 << 20;

/// pkgprof: the output chunk of [`ZstdDecompressor::decompress_chunk`], zstd's recommended
/// output size (`ZSTD_DStreamOutSize`, one block).
pub const CHUNK: usize = 128 << 10;

/// A zstd decompressor for PERF_RECORD_COMPRESSED records.
pub struct ZstdDecompressor {
    dctx: Option<DCtx<'static>>,
    buf: Option<Vec<u8>>,
}

impl Default for ZstdDecompressor {
    fn default() -> Self {
        Self::new()
    }
}

impl ZstdDecompressor {
    pub fn new() -> Self {
        Self {
            dctx: None,
            buf: None,
        }
    }

    /// pkgprof: decompresses from `compressed_data` at most one [`CHUNK`] and appends it to
    /// `uncompressed_data`. Called again with the rest of the input while
    /// [`Chunk::output_pending`] or input is left, it inflates a record a chunk at a time, so
    /// that a record inflating to 256 MiB never needs it all at once (upstream appended the
    /// whole record first).
    ///
    /// Returns zstd's name for the error if the data is not zstd.
    pub fn decompress_chunk(
        &mut self,
        compressed_data: &[u8],
        uncompressed_data: &mut Vec<u8>,
    ) -> Result<Chunk, &'static str> {
        let dctx = self.dctx.get_or_insert_with(DCtx::create);
        let buf = self.buf.get_or_insert_with(|| vec![0; CHUNK]);
        let mut in_buffer = InBuffer::around(compressed_data);
        let mut out_buffer = OutBuffer::around(&mut buf[..]);
        dctx.decompress_stream(&mut out_buffer, &mut in_buffer)
            .map_err(zstd_safe::get_error_name)?;
        let out_len = out_buffer.pos();
        uncompressed_data.extend_from_slice(&buf[..out_len]);
        Ok(Chunk {
            consumed: in_buffer.pos(),
            output_pending: out_len == buf.len(),
        })
    }
}

/// pkgprof: what one call of [`ZstdDecompressor::decompress_chunk`] did.
#[derive(Debug, Clone, Copy)]
pub struct Chunk {
    /// The bytes of input it used.
    pub consumed: usize,
    /// Whether it filled its output chunk, so that more output may follow without input.
    pub output_pending: bool,
}
