//! The frame input of an HTTP/2 connection: frames are parsed straight out of the read buffer
//! (an incomplete frame's bytes wait in the connection's `inbuf`), DATA payloads are skipped
//! (only counted for flow control), header blocks are HPACK-decoded for `:status` and
//! `grpc-status`, and SETTINGS, RST_STREAM, PING and GOAWAY act on the connection's slots.

use super::*;
use crate::h2::FrameHeader;

impl H2Loop<'_> {
    /// Parses what arrived on connection `i` (see the module docs).
    pub(super) fn input(&mut self, poll: &Poll, i: usize, data: &[u8]) -> Result<(), String> {
        let c = &mut self.conns[i];
        if c.inbuf.is_empty() {
            let used = self.frames(poll, i, data)?;
            if used < data.len() && self.conns[i].state == CState::Open {
                self.conns[i].inbuf.extend_from_slice(&data[used..]);
            }
        } else {
            c.inbuf.extend_from_slice(data);
            let b = std::mem::take(&mut c.inbuf);
            let used = self.frames(poll, i, &b)?;
            let c = &mut self.conns[i];
            if c.state == CState::Open && c.inbuf.is_empty() {
                let mut b = b;
                b.drain(..used);
                c.inbuf = b;
            }
        }
        Ok(())
    }

    /// Handles the whole frames at the start of `b`; returns how many bytes were used.
    pub(super) fn frames(&mut self, poll: &Poll, i: usize, b: &[u8]) -> Result<usize, String> {
        let mut pos = 0;
        loop {
            let c = &mut self.conns[i];
            if c.state != CState::Open {
                return Ok(b.len());
            }
            if c.skip > 0 {
                let k = c.skip.min(b.len() - pos);
                pos += k;
                c.skip -= k;
                if c.skip > 0 {
                    return Ok(pos);
                }
                if c.skip_end {
                    let id = c.skip_stream;
                    self.stream_done(poll, i, id);
                }
                continue;
            }
            let Some(h) = FrameHeader::parse(&b[pos..]) else {
                return Ok(pos);
            };
            if h.len > f::DEFAULT_MAX_FRAME {
                return Err(format!(
                    "HTTP/2 frame of {} bytes, over the {}-byte limit (FRAME_SIZE_ERROR)",
                    h.len,
                    f::DEFAULT_MAX_FRAME
                ));
            }
            if h.kind == f::DATA {
                pos += FrameHeader::SIZE;
                c.recv_unacked += h.len as u32;
                if c.recv_unacked >= f::CLIENT_WINDOW / 2 {
                    f::put_window_update(&mut c.out, 0, c.recv_unacked);
                    c.recv_unacked = 0;
                    self.mark_dirty(i);
                }
                let c = &mut self.conns[i];
                c.skip = h.len;
                c.skip_stream = h.stream;
                c.skip_end = h.flags & f::FLAG_END_STREAM != 0;
                if h.len == 0 && c.skip_end {
                    self.stream_done(poll, i, h.stream);
                }
                continue;
            }
            let end = pos + FrameHeader::SIZE + h.len;
            if b.len() < end {
                return Ok(pos);
            }
            self.frame(poll, i, h, &b[pos + FrameHeader::SIZE..end])?;
            pos = end;
        }
    }

    /// One frame other than DATA.
    pub(super) fn frame(
        &mut self,
        poll: &Poll,
        i: usize,
        h: FrameHeader,
        p: &[u8],
    ) -> Result<(), String> {
        let c = &mut self.conns[i];
        match h.kind {
            f::HEADERS => {
                let mut p = p;
                if h.flags & f::FLAG_PADDED != 0 {
                    let pad = usize::from(*p.first().ok_or("empty padded HEADERS")?);
                    p = p
                        .get(1..p.len().saturating_sub(pad))
                        .filter(|_| pad < h.len)
                        .ok_or("HEADERS padding longer than the frame")?;
                }
                if h.flags & f::FLAG_PRIORITY != 0 {
                    p = p.get(5..).ok_or("HEADERS priority longer than the frame")?;
                }
                let end_stream = h.flags & f::FLAG_END_STREAM != 0;
                if h.flags & f::FLAG_END_HEADERS != 0 {
                    self.header_block(poll, i, h.stream, p, end_stream)?;
                } else {
                    c.block.clear();
                    c.block.extend_from_slice(p);
                    c.block_stream = h.stream;
                    c.block_end = end_stream;
                }
            }
            f::CONTINUATION => {
                if h.stream != c.block_stream {
                    return Err("CONTINUATION of another stream (PROTOCOL_ERROR)".into());
                }
                c.block.extend_from_slice(p);
                if h.flags & f::FLAG_END_HEADERS != 0 {
                    let block = std::mem::take(&mut c.block);
                    let end = c.block_end;
                    self.header_block(poll, i, h.stream, &block, end)?;
                    self.conns[i].block = block;
                }
            }
            f::RST_STREAM => {
                let code =
                    u32::from_be_bytes(p.try_into().map_err(|_| "RST_STREAM of the wrong size")?);
                *self.counts.rst_stream.entry(code).or_insert(0) += 1;
                if let Some(s) = c
                    .slots
                    .iter()
                    .position(|s| s.state == SlotState::Flight && s.id == h.stream)
                {
                    c.in_flight -= 1;
                    if code == f::REFUSED_STREAM {
                        let slot = &mut c.slots[s];
                        slot.state = SlotState::Ready;
                        slot.timed = true;
                        self.issue(i);
                    } else {
                        let addr = self.b.spec.addr;
                        self.b.note_error(Kind::Stream, || {
                            format!(
                                "request to {addr}: stream reset by the server ({})",
                                f::error_name(code)
                            )
                        });
                        self.begin_after_failure(i, s, Instant::now());
                    }
                    self.after_stream(poll, i);
                }
            }
            f::SETTINGS => {
                if h.flags & f::FLAG_ACK != 0 {
                    return Ok(());
                }
                if !p.len().is_multiple_of(6) {
                    return Err("SETTINGS of the wrong size (FRAME_SIZE_ERROR)".into());
                }
                for kv in p.chunks_exact(6) {
                    let id = u16::from_be_bytes([kv[0], kv[1]]);
                    let v = u32::from_be_bytes([kv[2], kv[3], kv[4], kv[5]]);
                    match id {
                        f::SETTINGS_MAX_CONCURRENT_STREAMS => {
                            c.peer_max = v;
                            self.counts.server_max_streams = self.counts.server_max_streams.max(v);
                        }
                        f::SETTINGS_HEADER_TABLE_SIZE
                            if (v as usize) < self.h2.blocks.table_bytes =>
                        {
                            return Err(format!(
                                "the server allows an HPACK table of {v} bytes; the request's \
                                 headers need {}",
                                self.h2.blocks.table_bytes
                            ));
                        }
                        f::SETTINGS_INITIAL_WINDOW_SIZE
                            if self.h2.body.as_ref().is_some_and(|b| b.len() > v as usize) =>
                        {
                            return Err(format!(
                                "the server's stream window ({v} bytes) is smaller than the \
                                 request body"
                            ));
                        }
                        _ => {}
                    }
                }
                f::put_settings_ack(&mut c.out);
                self.mark_dirty(i);
                self.issue(i);
            }
            f::PING if h.flags & f::FLAG_ACK == 0 => {
                f::put_ping_ack(&mut c.out, p);
                self.mark_dirty(i);
            }
            f::GOAWAY => {
                if p.len() < 8 {
                    return Err("GOAWAY shorter than 8 bytes".into());
                }
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                *self.counts.goaway.entry(code).or_insert(0) += 1;
                if code != 0 {
                    let addr = self.b.spec.addr;
                    self.b.note_error(Kind::Stream, || {
                        format!("{addr}: the server sent GOAWAY ({})", f::error_name(code))
                    });
                }
                let c = &mut self.conns[i];
                c.goaway = Some(last);
                // Streams the server did not take are sent again on the next connection.
                for slot in &mut c.slots {
                    if slot.state == SlotState::Flight && slot.id > last {
                        slot.state = SlotState::Ready;
                        slot.timed = true;
                        c.in_flight -= 1;
                    }
                }
                self.after_stream(poll, i);
            }
            f::PUSH_PROMISE => {
                return Err("PUSH_PROMISE although push was disabled (PROTOCOL_ERROR)".into());
            }
            _ => {}
        }
        Ok(())
    }

    /// A complete header block of stream `id` (HPACK state changes even for unknown streams).
    pub(super) fn header_block(
        &mut self,
        poll: &Poll,
        i: usize,
        id: u32,
        block: &[u8],
        end_stream: bool,
    ) -> Result<(), String> {
        let c = &mut self.conns[i];
        let mut status = 0u16;
        let mut grpc = None;
        // Without a dynamic table (the server confirmed our HEADER_TABLE_SIZE of 0), only the
        // status is read, without decoding the block (see `f::response_status`).
        let fast = if self.h2.grpc || c.hpack.max_dynamic_size() != 0 {
            None
        } else {
            f::response_status(block)
        };
        if let Some(s) = fast {
            status = s;
        } else {
            c.scratch.clear();
            c.scratch.extend_from_slice(block);
            c.fields.clear();
            c.hpack
                .decode(&mut c.scratch, &mut c.fields)
                .map_err(|e| format!("HPACK: {e:?} (COMPRESSION_ERROR)"))?;
            for (n, v, _) in &c.fields {
                if n == b":status" {
                    status = std::str::from_utf8(v)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                } else if n == b"grpc-status" {
                    grpc = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
                }
            }
        }
        if let Some(slot) = c
            .slots
            .iter_mut()
            .find(|s| s.state == SlotState::Flight && s.id == id)
        {
            if status >= 200 || (status > 0 && slot.status == 0 && status < 100) {
                slot.status = status;
            }
            if grpc.is_some() {
                slot.grpc = grpc;
            }
        }
        if end_stream {
            self.stream_done(poll, i, id);
        }
        Ok(())
    }
}
