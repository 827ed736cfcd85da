package gitsource

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	gitgit "github.com/go-git/go-git/v5/plumbing/transport/git"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// maxAdvertisement bounds a remote's ref advertisement (the answer to
// info/refs over http, the first answer of upload-pack over git:// and
// ssh://), which go-git reads whole into memory: an endless one grew a
// fetch by 15 MiB a second until the fetch timeout. 16 MiB is some
// 200,000 refs. The pack that follows is bounded by [Options].MaxFetch as
// it is written.
const maxAdvertisement = 16 << 20

// go-git picks the transport of a URL from one table for the process; the
// ones it installs by default read advertisements without bound.
func init() {
	c := githttp.NewClient(&http.Client{Transport: boundedTransport{}})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
	client.InstallProtocol("git", boundedSessions{gitgit.DefaultClient})
	client.InstallProtocol("ssh", boundedSessions{gitssh.DefaultClient})
}

// boundedTransport is http.DefaultTransport (looked up at each request,
// so that its proxy settings apply) whose ref advertisements are bounded.
type boundedTransport struct{}

func (boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet {
		lim := &advertLimit{r: resp.Body, host: r.URL.Host}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{lim, resp.Body}
	}
	return resp, err
}

// boundedSessions wraps go-git's git:// and ssh:// transports, which
// read the advertisement and the pack from one stream (the connection,
// the ssh channel): the stream is bounded until the advertisement is
// read, then left to [Options].MaxFetch.
type boundedSessions struct{ transport.Transport }

func (t boundedSessions) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	s, err := t.Transport.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	// go-git builds these sessions on a stream it does not let callers
	// wrap, but keeps it in the session's exported Stdout field; a go-git
	// without that field fails every fetch here (and the hostile tests
	// say so) rather than fetching unbounded.
	v := reflect.ValueOf(s)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var f reflect.Value
	if v.Kind() == reflect.Struct {
		f = v.FieldByName("Stdout")
	}
	if !f.IsValid() || !f.CanSet() || f.Type() != reflect.TypeFor[io.Reader]() || f.IsNil() {
		s.Close()
		return nil, fmt.Errorf("%s: this build's go-git (%T) hides the stream skillport bounds; fetch over https instead", ep.Host, s)
	}
	host := ep.Host
	if ep.Port != 0 {
		host = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	}
	lim := &advertLimit{r: f.Interface().(io.Reader), host: host}
	f.Set(reflect.ValueOf(lim))
	return &boundedSession{UploadPackSession: s, lim: lim}, nil
}

// boundedSession lifts its stream's bound once the advertisement is read.
type boundedSession struct {
	transport.UploadPackSession
	lim *advertLimit
}

func (s *boundedSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s *boundedSession) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	ar, err := s.UploadPackSession.AdvertisedReferencesContext(ctx)
	if err == nil {
		s.lim.lifted.Store(true)
	}
	return ar, err
}

func (s *boundedSession) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	// go-git reads the advertisement first if nobody did: through here,
	// so that the bound is lifted only after it.
	if !req.IsEmpty() {
		if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
			return nil, err
		}
	}
	return s.UploadPackSession.UploadPack(ctx, req)
}

// advertLimit fails once more than maxAdvertisement bytes were read,
// unless lifted.
type advertLimit struct {
	r      io.Reader
	host   string
	read   atomic.Int64
	lifted atomic.Bool
}

func (b *advertLimit) Read(p []byte) (int, error) {
	if b.lifted.Load() {
		return b.r.Read(p)
	}
	left := maxAdvertisement - b.read.Load()
	if left <= 0 {
		return 0, fmt.Errorf("%s sent a ref advertisement of more than %d bytes; skillport reads no more", b.host, maxAdvertisement)
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}
