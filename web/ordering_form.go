package web

import (
	"maps"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// orderingNone is the console's ordering choice for an unordered group; the other
// choices are the models.Ordering values (key, queue).
const orderingNone = "none"

// orderingChoice is one option of the console's ordering control: Value is what the
// form sends, Name the mode's name on the group page, Label what one failure holds
// up and Help how messages go; the exhaustion setting's words follow it
// (ExhaustedLabel for its label, DeadLetterOption and PauseOption for its choices).
type orderingChoice struct {
	Value, Name, Label, Help                      string
	ExhaustedLabel, DeadLetterOption, PauseOption string
}

// orderingChoices are the console's ordering options in the order they show, as the
// README's "Ordered groups" describes the modes.
var orderingChoices = []orderingChoice{
	{Value: orderingNone, Name: "not ordered",
		Label:            "not ordered: a failure holds nothing up",
		Help:             "messages go in parallel (up to max in flight); a failed one is retried later through the retry topic",
		ExhaustedLabel:   "When a blocked head exhausts its attempts (applies once the group is ordered by key or by queue)",
		DeadLetterOption: "dead-letter it and move on", PauseOption: "pause its key (or queue) for an operator"},
	{Value: string(models.OrderingKey), Name: "ordered by key",
		Label:            "by key: a failure holds only its key",
		Help:             "each key's messages in publish order, one POST per key at a time; other keys flow in parallel; keyless messages are not ordered",
		ExhaustedLabel:   "When a key's head message exhausts its attempts",
		DeadLetterOption: "dead-letter it; the key moves on", PauseOption: "pause the key for an operator"},
	{Value: string(models.OrderingQueue), Name: "ordered by queue",
		Label:            "by queue: a failure holds its whole queue",
		Help:             "one POST per queue at a time, in offset order; other queues flow in parallel",
		ExhaustedLabel:   "When a queue's head message exhausts its attempts",
		DeadLetterOption: "dead-letter it; the queue moves on", PauseOption: "pause the queue for an operator"},
}

// orderingFormView is what the create and settings forms' ordering fields show:
// the ids' Prefix, the form's values and field errors, and the mode whose words the
// exhaustion setting uses.
type orderingFormView struct {
	Prefix       string
	Form, Errors map[string]string
	Mode         orderingChoice
}

// orderingOf is the console's ordering choice for settings: none, key or queue.
func orderingOf(ordered bool, ordering models.Ordering) string {
	if !ordered {
		return orderingNone
	}
	if ordering == "" {
		return string(models.OrderingKey)
	}
	return string(ordering)
}

// orderingChoiceOf is the option whose Value is v; an unknown v reads as none.
func orderingChoiceOf(v string) orderingChoice {
	for _, c := range orderingChoices {
		if c.Value == v {
			return c
		}
	}
	return orderingChoices[0]
}

// OrderingChoice is the group's ordering control option: its mode's name and the
// exhaustion setting's words for it.
func (v groupView) OrderingChoice() orderingChoice {
	return orderingChoiceOf(orderingOf(v.Ordered, v.Group.Ordering))
}

// orderingFields reads the ordering control's value v (none, key or queue) as the
// API's ordered and ordering; an unknown value is refused on /ordering.
func orderingFields(v string) (ordered bool, ordering *models.Ordering, errs map[string]string) {
	switch v {
	case orderingNone:
		return false, nil, nil
	case string(models.OrderingKey), string(models.OrderingQueue):
		o := models.Ordering(v)
		return true, &o, nil
	}
	return false, nil, map[string]string{"/ordering": "choose not ordered, by key or by queue"}
}

// applyOrderingForm sets p's ordered and ordering from the settings form's ordering
// value; none turns ordering off (and clears the mode), key or queue turn it on
// in that mode.
func applyOrderingForm(v string, p *control.GroupPatch, errs map[string]string) {
	ordered, ordering, bad := orderingFields(v)
	if bad != nil {
		maps.Copy(errs, bad)
		return
	}
	p.Ordered, p.Ordering = &ordered, ordering
}
