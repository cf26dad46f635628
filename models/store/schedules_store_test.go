package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/models"
)

// TestScheduleCreateRacesTopicDelete: schedules created while their topic is
// deleted either exist with the topic or fail with ErrNotFound; none outlives its
// topic, and every create that succeeded returned the schedule as stored.
func TestScheduleCreateRacesTopicDelete(t *testing.T) {
	t.Parallel()
	_, st := heraldtest.Database(t)
	ctx := context.Background()
	for round := range 40 {
		name := fmt.Sprintf("r%d", round)
		topic, err := st.TopicCreate(ctx, name, 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 8 {
					_, err := st.TopicDelete(ctx, name, false)
					require.NoError(t, err)
					return
				}
				sc := &models.Schedule{Name: fmt.Sprintf("%s-s%d", name, i), TopicID: topic.ID, Cron: "* * * * *", Timezone: "UTC",
					NextRun: time.Now().Add(time.Minute), Message: models.Message{Body: []byte(`{}`), ContentType: "application/json"}}
				err := st.ScheduleCreate(ctx, sc)
				if err != nil {
					require.True(t, errors.Is(err, models.ErrNotFound), "%v", err)
					return
				}
				require.Equal(t, name, sc.Topic)
				require.NotZero(t, sc.ID)
			}()
		}
		wg.Wait()
	}
	all, err := st.ScheduleList(ctx, 0, 500)
	require.NoError(t, err)
	for _, sc := range all {
		require.NotEmpty(t, sc.Topic, "schedule %s outlived its topic", sc.Name)
	}
	require.Empty(t, all, "every topic was deleted, and its schedules with it")
}
