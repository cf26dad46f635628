package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/models"
)

// standInEnv names the stand-in's DSN when heraldbench runs as the stand-in server
// (a child process of itself, see startStandIn).
const standInEnv = "HERALDBENCH_STANDIN_DSN"

// runStandIn is the stand-in server: a separate process like Herald, so that each
// hop wakes another process as Herald's do. POST /publish?hook=URL&db=1 reads the
// body, stores it with one autocommit INSERT … RETURNING id (db=1; the text
// protocol with interpolated parameters, as Herald's flush) into the next of four
// queue-shaped tables, answers 201 with the id, and POSTs the body to hook from
// another goroutine on a kept-alive connection (as Herald's notification and
// worker do). The answer's X-Insert-Us header is the INSERT's time in µs. It prints
// its address on stdout and serves until stdin closes.
func runStandIn(dsn string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.InterpolateParams = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(16)
	// Four tables of a Herald queue table's shape, written one after the other as a
	// 4-queue topic's flushes are.
	for i := range 4 {
		if _, err := db.Exec(models.QueueTableDDL(fmt.Sprintf("standin_q%d", i))); err != nil {
			return err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second}}
	var next atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /publish", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := "standin_" + strconv.FormatInt(next.Add(1), 10)
		var took time.Duration
		if r.URL.Query().Get("db") == "1" {
			t := time.Now()
			q := fmt.Sprintf("INSERT INTO standin_q%d (tag, msg_key, headers, body, content_type, trace_id, created_at, producer_ip) VALUES (?,?,?,?,?,?,?,?) RETURNING id", next.Load()%4)
			var row int64
			if err := db.QueryRowContext(r.Context(), q, []byte{}, []byte{}, nil, body, "application/json", "", time.Now().UnixMilli(), "127.0.0.1").Scan(&row); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			took = time.Since(t)
			id = fmt.Sprintf("%s_%d", id, row)
		}
		hook := r.URL.Query().Get("hook")
		go func() {
			req, err := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("content-type", "application/json")
			req.Header.Set("webhook-id", id)
			if resp, err := hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		w.Header().Set("X-Insert-Us", strconv.FormatInt(took.Microseconds(), 10))
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, id)
	})
	fmt.Println(l.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		l.Close()
	}()
	err = http.Serve(l, mux)
	if err != nil && strings.Contains(err.Error(), "use of closed") {
		return nil
	}
	return err
}

// standIn is a running stand-in server process.
type standIn struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	hc    *http.Client
}

// startStandIn starts heraldbench itself as the stand-in server on dsn.
func startStandIn(dsn string) (*standIn, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), standInEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("stand-in server did not start: %w", err)
	}
	return &standIn{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(line),
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}, nil
}

// stop closes the stand-in's stdin and waits for it to exit.
func (s *standIn) stop() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// standInRun is one series through the stand-in: per message the time from the
// request's start to the receiver's handler, and the INSERT's time (db only).
type standInRun struct{ e2e, insert []time.Duration }

// series sends n 1 KiB messages through the stand-in (db: with the INSERT) to sink
// sk at hook, one every interval (0: each right after the previous answer, as one
// unpaced publisher). Nothing polls while messages are on their way (a busy core
// would hide the idle wake-ups this measures): receipts are read at the end.
func (s *standIn) series(ctx context.Context, sk *sink, hook string, db bool, n int, interval time.Duration) (standInRun, error) {
	var out standInRun
	u := "http://" + s.addr + "/publish?hook=" + hook
	if db {
		u += "&db=1"
	}
	ids := make([]string, 0, n)
	starts := make([]time.Time, 0, n)
	t0 := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if interval > 0 {
			time.Sleep(time.Until(t0.Add(time.Duration(i) * interval)))
		}
		body := padBody(i, 1024)
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return out, err
		}
		req.Header.Set("content-type", "application/json")
		resp, err := s.hc.Do(req)
		if err != nil {
			return out, err
		}
		idb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return out, fmt.Errorf("stand-in answered HTTP %d: %s", resp.StatusCode, idb)
		}
		if us, err := strconv.ParseInt(resp.Header.Get("X-Insert-Us"), 10, 64); err == nil && db {
			out.insert = append(out.insert, time.Duration(us)*time.Microsecond)
		}
		ids = append(ids, string(idb))
		starts = append(starts, start)
	}
	time.Sleep(100 * time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for i, id := range ids {
		for {
			if d, ok := sk.lookup(id); ok {
				out.e2e = append(out.e2e, d.first.Sub(starts[i]))
				break
			}
			select {
			case <-wctx.Done():
				return out, fmt.Errorf("stand-in message %s not received", id)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	slices.Sort(out.e2e)
	slices.Sort(out.insert)
	return out, nil
}
