package gitsource

import (
	"fmt"
	"io"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// maxAdvertisement bounds a smart-HTTP remote's ref advertisement (the
// answer to info/refs), which go-git reads whole into memory: an endless
// one grew a fetch by 15 MiB a second until the fetch timeout. 16 MiB is
// some 200,000 refs. The pack that follows is bounded by
// [Options].MaxFetch as it is written.
const maxAdvertisement = 16 << 20

// go-git picks the transport of a URL from one table for the process; the
// http one it installs by default reads answers without bound.
func init() {
	c := githttp.NewClient(&http.Client{Transport: boundedTransport{}})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}

// boundedTransport is http.DefaultTransport (looked up at each request,
// so that its proxy settings apply) whose ref advertisements are bounded.
type boundedTransport struct{}

func (boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxAdvertisement, host: r.URL.Host}
	}
	return resp, err
}

// boundedBody fails once more than left bytes were read.
type boundedBody struct {
	io.ReadCloser
	left int64
	host string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%s sent a ref advertisement of more than %d bytes; skillport reads no more", b.host, maxAdvertisement)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
