package delivery

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ReportField is the one field of an entry in a dispatcher's report stream
// (Keys.Reports): its value is a JSON array of Report, every report a worker had
// waiting for that dispatcher when it sent (worker/reportsend.go).
const ReportField = "r"

// ReportEntry returns the ReportField value carrying reports, each a JSON-encoded
// Report.
func ReportEntry(reports [][]byte) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range reports {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	b.WriteByte(']')
	return b.String()
}

// ParseReportEntry returns the reports of a report stream entry's fields (as
// go-redis returns them). An entry without ReportField or whose value is not a JSON
// array of Report is an error.
func ParseReportEntry(values map[string]any) ([]Report, error) {
	v, ok := values[ReportField].(string)
	if !ok {
		return nil, fmt.Errorf("report entry without field %q", ReportField)
	}
	var rs []Report
	if err := json.Unmarshal([]byte(v), &rs); err != nil {
		return nil, fmt.Errorf("report entry: %w", err)
	}
	return rs, nil
}
