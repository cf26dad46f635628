package e2e

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/delivery"
)

// startWorkerProcess runs `herald worker` against h's database and namespace and
// returns the running command.
func startWorkerProcess(t *testing.T, h *heraldtest.Herald) *exec.Cmd {
	t.Helper()
	return startRoleProcess(t, h, "worker")
}

// startRoleProcess runs `herald <role>` against h's database and namespace, with
// the extra NAME=value settings env, and returns the running command; it is killed
// when the test ends.
func startRoleProcess(t *testing.T, h *heraldtest.Herald, role string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(heraldBin, role)
	cmd.Env = append(os.Environ(), h.Env()...)
	if role == "worker" {
		cmd.Env = append(cmd.Env, h.WorkerEnv()...)
	}
	cmd.Env = append(cmd.Env, env...)
	logs := &tailBuffer{max: 16 << 10}
	cmd.Stderr = logs
	if os.Getenv("HERALD_TEST_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() && logs.Len() > 0 {
			t.Logf("herald %s (pid %d), the end of its log:\n%s", role, cmd.Process.Pid, logs.String())
		}
	})
	return cmd
}

// tailBuffer keeps the last max bytes written to it (a process's log, shown when
// its test fails). Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

// Len is how many bytes are kept.
func (w *tailBuffer) Len() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.b) }

func (w *tailBuffer) String() string { w.mu.Lock(); defer w.mu.Unlock(); return string(w.b) }

// TestWorkerKilledMidPost kills a worker process while its POST is open. The asynq
// task stays "active" forever; the dispatcher must re-dispatch the job under a new
// generation once its deadline passes with no report and no heartbeat, and the
// message must be delivered again with the same webhook-id; the cursor ends right.
func TestWorkerKilledMidPost(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true, Dispatcher: true}, nil)
	h.CreateTopic("crash", 1)
	r := heraldtest.NewReceiver(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	first := true
	r.Respond = func(d heraldtest.Delivery) int {
		if first {
			first = false
			arrived <- struct{}{}
			<-release // hold the POST open until the worker is dead
			return 500
		}
		return 204
	}
	r.SetSecret(h.CreateGroup(map[string]any{"name": "g", "endpoint_url": r.URL, "timeout_ms": 2000,
		"subscriptions": []map[string]any{{"topic": "crash"}}}))
	key := h.CreateAPIKey("crash")

	worker := startRoleProcess(t, h, "worker", "HERALD_WORKER_PUSH_JOBS=false") // asynq's path; pushed jobs: TestPushedWorkerKilled
	msg := h.Publish(key, "crash", map[string]any{"body": map[string]string{"hello": "world"}})[0]
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("the first POST never arrived")
	}
	require.NoError(t, worker.Process.Signal(syscall.SIGKILL))
	_ = worker.Wait()
	close(release)

	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: h.Cfg.RedisAddr})
	defer insp.Close()
	active, err := insp.ListActiveTasks(delivery.Keys{Namespace: h.Cfg.Namespace}.AsynqQueue())
	require.NoError(t, err)
	require.Len(t, active, 1, "the killed worker's task is left active")
	require.True(t, strings.HasSuffix(active[0].ID, ":g0"), active[0].ID)

	h.Start(app.Roles{Worker: true}) // a fresh worker
	r.WaitCount(1, 30*time.Second)
	ds := r.Get(msg.ID)
	require.Len(t, ds, 1)
	require.Equal(t, msg.ID, ds[0].ID)
	require.True(t, ds[0].Verified)
	require.JSONEq(t, `{"hello":"world"}`, string(ds[0].Body))
	waitCommitted(t, h, msg.Queue, msg.Offset)
}
