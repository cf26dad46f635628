package web

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// overviewHours is how far back the overview chart reaches.
const overviewHours = control.StatsHours

// groupRow is one group in the console's tables: status, lag (messages), the last
// hour's delivered and failed counts and its main limits.
type groupRow struct {
	Name, Status, PausedReason        string
	Lag, Delivered, Failed            int64
	RateLimit, BatchSize, MaxInFlight int
	Topics                            string
}

func groupRows(gs []*models.Group, lags map[int64]int64, totals control.StatsTotals) []groupRow {
	out := make([]groupRow, 0, len(gs))
	for _, g := range gs {
		var topics []string
		for _, sub := range g.Subscriptions {
			topics = append(topics, sub.Topic)
		}
		out = append(out, groupRow{Name: g.Name, Status: string(g.Status), PausedReason: g.PausedReason, Lag: lags[g.ID],
			Delivered: totals.GroupDelivered[g.ID], Failed: totals.GroupFailed[g.ID], RateLimit: g.RateLimit,
			BatchSize: g.BatchSize, MaxInFlight: g.MaxInFlight, Topics: strings.Join(topics, ", ")})
		if g.Unreadable != "" { // listed, not delivered: say why instead of its status
			out[len(out)-1].Status, out[len(out)-1].PausedReason = "unreadable", g.Unreadable
		}
	}
	return out
}

// attentionOrder sorts groups needing attention first: failures in the last hour,
// then not running, then lag, then name.
func attentionOrder(rows []groupRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Failed != b.Failed {
			return a.Failed > b.Failed
		}
		if (a.Status != string(models.GroupRunning)) != (b.Status != string(models.GroupRunning)) {
			return a.Status != string(models.GroupRunning)
		}
		if a.Lag != b.Lag {
			return a.Lag > b.Lag
		}
		return a.Name < b.Name
	})
}

type overviewPage struct {
	Published, Delivered, Failed, TotalLag int64
	GroupCount, TopicCount, Hours          int
	Chart                                  any
	Groups                                 []groupRow
	// NodesDown words each db node seen down (nodesDownLines): the overview warns.
	NodesDown []string
}

// statsChart draws published/delivered/failed per minute of a series.
func statsChart(points []control.StatsPoint, published bool) any {
	times := make([]time.Time, len(points))
	var pub, del, fail []float64
	for i, p := range points {
		times[i] = p.Minute
		pub = append(pub, float64(p.Published))
		del = append(del, float64(p.Delivered))
		fail = append(fail, float64(p.Failed))
	}
	series := []Series{{Label: "delivered", Colour: "green", Values: del}, {Label: "failed", Colour: "red", Values: fail}}
	if published {
		series = append([]Series{{Label: "published", Colour: "blue", Values: pub}}, series...)
	}
	return Chart(times, series, 600, 180)
}

func (s *Console) consoleOverview(c echo.Context) error {
	ctx := c.Request().Context()
	o, err := s.ctl.Overview(ctx)
	if err != nil {
		return err
	}
	points, gs, lags := o.Series, o.Groups, o.Lags
	page := overviewPage{GroupCount: len(gs), Hours: overviewHours, Chart: statsChart(points, true), NodesDown: nodesDownLines(o.NodesDown)}
	for _, p := range points[max(len(points)-61, 0):] {
		page.Published += p.Published
		page.Delivered += p.Delivered
		page.Failed += p.Failed
	}
	for _, l := range lags {
		page.TotalLag += l
	}
	page.TopicCount = int(o.TopicCount)
	rows := groupRows(gs, lags, o.Totals)
	attentionOrder(rows)
	page.Groups = rows[:min(len(rows), 20)]
	return s.render(c, http.StatusOK, "overview", "overview", "Overview", page, "", "")
}
