package runtime

// turnStack is about the stack a session's goroutine reaches in a turn:
// encoding a request, reading the answer, checking a tool's arguments
// against its schema.
const turnStack = 16 << 10

// growStack makes the calling goroutine's stack big enough for a turn at
// once, while only a frame or two is on it. A goroutine starts with a
// small stack that Go doubles when a call needs more, copying every frame
// then on it; left to grow on its own, a session's stack grows several
// times deep in its first turn, where each copy is dearer.
//
//go:noinline
func growStack() {
	var pad [turnStack]byte
	touch(pad[:])
}

//go:noinline
func touch(b []byte) { b[0] = 1 }
