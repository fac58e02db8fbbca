package proxy

import (
	"bytes"
	"sync"
)

// The frame buffers of the SSE streams (events_sse.go): a stream frames one batch at a time into
// a buffer it takes from a pool, and gives it back when it ends or goes idle.

// maxReusedFrameBuffer bounds the frame buffer a stream keeps between batches.
const maxReusedFrameBuffer = 256 << 10

// Frame buffers are pooled across streams: most streams are short (a streamed start lives for
// one execution), and each grew its own buffer from nothing, batch after batch (~7 KB of
// allocations per e2e execution). A stream takes one for its first batch and gives it back when
// it ends or goes idle; buffers over maxPooledFrameBuffer are left to the GC.
const maxPooledFrameBuffer = 16 << 10

var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// takeFrameBuffer empties s.buf, taking a pooled buffer if the stream holds none.
func (s *stream) takeFrameBuffer() {
	if s.buf.Cap() == 0 {
		bp := frameBuffers.Get().(*[]byte)
		s.buf = *bytes.NewBuffer((*bp)[:0])
		*bp = nil
		frameBufferBoxes.Put(bp)
		return
	}
	s.buf.Reset()
}

// frameBufferBoxes recycles the pointers the pool holds buffers in, so that giving a buffer
// back allocates nothing either.
var frameBufferBoxes = sync.Pool{New: func() any { return new([]byte) }}

// releaseFrameBuffer gives s.buf back to the pool (a large one to the GC). No write may use
// its bytes afterwards: writes are synchronous, and the stream only releases between them.
func (s *stream) releaseFrameBuffer() {
	if c := s.buf.Cap(); c > 0 && c <= maxPooledFrameBuffer {
		bp := frameBufferBoxes.Get().(*[]byte)
		*bp = s.buf.Bytes()[:0]
		frameBuffers.Put(bp)
	}
	s.buf = bytes.Buffer{}
}
