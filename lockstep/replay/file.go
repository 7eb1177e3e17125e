package replay

import (
	"fmt"
	"io"
	"os"
)

// ReadTrailer reads the trailer at the end of a replay of size bytes,
// without reading the body. A file that does not end with a trailer (a
// session that crashed, a cut file) gives an error wrapping ErrTruncated; a
// damaged trailer one wrapping ErrChecksum.
func ReadTrailer(r io.ReaderAt, size int64) (Trailer, error) {
	if size < prefixSize+TrailerSize {
		return Trailer{}, fmt.Errorf("%w: a file of %d bytes cannot hold a header and a trailer", ErrTruncated, size)
	}
	at := size - TrailerSize
	var b [TrailerSize]byte
	if _, err := r.ReadAt(b[:], at); err != nil {
		return Trailer{}, fmt.Errorf("replay: reading the trailer at byte %d: %w", at, err)
	}
	if magic := b[32:40]; string(magic) != TrailerMagic {
		// One damaged byte in the magic is damage; anything else means
		// there is no trailer.
		diff := 0
		for i := range magic {
			if magic[i] != TrailerMagic[i] {
				diff++
			}
		}
		if diff > 1 {
			return Trailer{}, fmt.Errorf("%w: no trailer at the end of the file (bytes %d to %d are not %q): the recording was not closed, or the file was cut", ErrTruncated, at+32, at+39, TrailerMagic)
		}
	}
	return parseTrailer(b[:], at)
}

// File is a replay file opened by OpenFile: a Reader positioned after the
// header, and the trailer read from the end of the file.
type File struct {
	*Reader
	f          *os.File
	size       int64
	trailer    Trailer
	trailerErr error
}

// OpenFile opens the replay file name, reads its header and its trailer.
// A missing or damaged trailer is not an error of OpenFile: see
// File.Trailer. The caller must Close the File.
func OpenFile(name string) (*File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("replay: %w", err)
	}
	rf := &File{f: f, size: st.Size()}
	rf.trailer, rf.trailerErr = ReadTrailer(f, rf.size)
	if rf.Reader, err = NewReader(f); err != nil {
		f.Close()
		return nil, err
	}
	if rf.trailerErr == nil {
		rf.limitFrames(rf.trailer.LastFrame)
	}
	return rf, nil
}

// Trailer returns the trailer read from the end of the file, or why there
// is none (an error wrapping ErrTruncated, ErrChecksum or ErrMalformed).
func (f *File) Trailer() (Trailer, error) { return f.trailer, f.trailerErr }

// Size returns the file's size in bytes.
func (f *File) Size() int64 { return f.size }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// trailerOf returns the trailer at the end of r, when r can be read from
// the end: an *os.File, or an io.ReaderAt with a Size method
// (bytes.Reader, io.SectionReader), at its start. It returns false
// otherwise, or when r has no valid trailer.
func trailerOf(r io.Reader) (Trailer, bool) {
	var (
		ra   io.ReaderAt
		size int64
	)
	switch v := r.(type) {
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return Trailer{}, false
		}
		ra, size = v, st.Size()
	case interface {
		io.ReaderAt
		Size() int64
	}:
		ra, size = v, v.Size()
	default:
		return Trailer{}, false
	}
	// Only a reader at the start of the file can be checked this way.
	if s, ok := r.(io.Seeker); ok {
		if pos, err := s.Seek(0, io.SeekCurrent); err != nil || pos != 0 {
			return Trailer{}, false
		}
	}
	t, err := ReadTrailer(ra, size)
	return t, err == nil
}
