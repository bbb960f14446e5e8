package main

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/emf"
	"github.com/aijobs/aijobs/pkg/settings"
)

// dlqWorld simulates the dead letter queue, second by second, with
// everything that touches it, and publishes the metrics AWS would publish
// about it, as documented:
//
//   - SQS pushes its metrics "at one-minute intervals", for queues that are
//     active: "CloudWatch considers a queue to be active for up to six
//     hours if it contains any messages or if any action accesses it"
//     (SQS developer guide, sqs-monitoring-using-cloudwatch.html); an
//     inactive queue publishes nothing, and when it wakes its metrics can
//     arrive up to 15 minutes late (wakeDelay);
//   - ApproximateNumberOfMessagesVisible is reported while the queue is
//     active, ApproximateNumberOfMessagesNotVisible only while messages are
//     in flight (sqs-available-cloudwatch-metrics.html); both are
//     approximate, and DLQs have been seen reporting a message for less
//     than a minute with none there (cdklabs/construct-hub#1758, #1779):
//     blips adds such readings;
//   - NumberOfMessagesSent counts SendMessage to the DLQ, but "a message
//     sent to a dead-letter queue as a result of a failed processing
//     attempt isn't captured by this metric" (sqs-dead-letter-queues.html):
//     SQS's own redrive is not counted;
//   - a message moved by redrive keeps its original enqueue timestamp, and
//     expires by it (same page); a message the worker sends is new;
//   - the reconciler's EMF lines become metrics emfDelay after its run.
//
// The actors are the ones docs/deploy.md describes: the worker sends a
// message to the DLQ itself (poison, or its receive count reached
// maxReceiveCount-1); SQS's redrive moves the messages no worker ever saw;
// the reconciler sweeps the DLQ every ReconcileEvery, receiving every
// message with a 30 s visibility timeout and marking each job not yet
// terminal failed/dead_lettered, once, without deleting anything;
// `aijobs replay --from dlq` receives the messages hiding them 15 minutes,
// deletes those it handled and restores the others (unless killed).
type dlqWorld struct {
	s                   settings.Settings
	sent, visible       string // metric keys, rendered as the template names them
	notVisible, deleted string
	marked              string

	store  metricStore
	msgs   []*dlqMessage
	events map[time.Duration][]func()

	sweeps      bool          // the reconciler runs and sweeps the DLQ
	resends     bool          // the sweep is the notifier's: it re-sends what it marks
	sweepPhase  time.Duration // first run
	sweepRun    time.Duration // how long a run takes before it emits
	emfDelay    time.Duration
	publishLag  time.Duration // a normal SQS datapoint's delay after its minute
	wakeDelay   time.Duration
	blips       map[time.Duration]bool // minutes whose NotVisible reads one too many
	lastAccess  time.Duration          // last API action on the DLQ
	asleep      bool
	woke        time.Duration
	sendsMinute float64
	delsMinute  float64
}

type dlqMessage struct {
	enqueued    time.Duration // original enqueue time, for retention
	hiddenUntil time.Duration
	gone        bool
	jobLive     bool // its job is not terminal yet: the sweep marks it, once
	// replayed: its job was replayed after the message arrived (a replay
	// died before deleting it); the sweep must leave such a job alone
	replayed bool
}

// newDLQWorld is an empty, active DLQ with the reconciler sweeping it
// every ReconcileEvery from the first minute.
func newDLQWorld(t *testing.T, s *synthesized) *dlqWorld {
	t.Helper()
	dlqID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.DLQName()))
	dim := map[string]string{"QueueName": render(map[string]any{"Fn::GetAtt": []any{dlqID, "QueueName"}})}
	return &dlqWorld{
		s:          s.cfg.Settings,
		sent:       metricKey("AWS/SQS", "NumberOfMessagesSent", dim),
		visible:    metricKey("AWS/SQS", "ApproximateNumberOfMessagesVisible", dim),
		notVisible: metricKey("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", dim),
		deleted:    metricKey("AWS/SQS", "NumberOfMessagesDeleted", dim),
		marked:     metricKey(emf.Namespace, "DeadLetteredJobs", nil),
		store:      metricStore{},
		events:     map[time.Duration][]func(){},
		sweeps:     true,
		sweepPhase: time.Minute,
		sweepRun:   20 * time.Second,
		emfDelay:   time.Minute,
		publishLag: time.Minute,
		wakeDelay:  15 * time.Minute,
		blips:      map[time.Duration]bool{},
	}
}

// newCallbackDLQWorld is the callback DLQ with the notifier's sweep
// (pkg/notifier.Sweep) every ReconcileEvery: the same SQS, but the sweep
// marks a notice SQS's redrive moved (no aijobs_reason; jobLive here) by
// sending a copy with reason callback_redriven (a SendMessage, counted in
// NumberOfMessagesSent) and deleting the original, and emits
// CallbackNoticesRedriven. workerSend is the notifier giving a notice up
// (or the stream mapping's record of a discarded batch), live false:
// already marked.
func newCallbackDLQWorld(t *testing.T, s *synthesized) *dlqWorld {
	t.Helper()
	w := newDLQWorld(t, s)
	id, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.CallbackDLQName()))
	dim := map[string]string{"QueueName": render(map[string]any{"Fn::GetAtt": []any{id, "QueueName"}})}
	w.sent = metricKey("AWS/SQS", "NumberOfMessagesSent", dim)
	w.visible = metricKey("AWS/SQS", "ApproximateNumberOfMessagesVisible", dim)
	w.notVisible = metricKey("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", dim)
	w.deleted = metricKey("AWS/SQS", "NumberOfMessagesDeleted", dim)
	w.marked = metricKey(emf.Namespace, "CallbackNoticesRedriven", nil)
	w.resends = true
	return w
}

func (w *dlqWorld) at(t time.Duration, f func()) { w.events[t] = append(w.events[t], f) }

// access is an API action on the DLQ: it keeps (or makes) the queue active.
func (w *dlqWorld) access(now time.Duration) { w.lastAccess = now }

// workerSend is the worker dead-lettering a message itself (SendMessage);
// live: the message names a job that is not terminal (receive_limit),
// else it is poison.
func (w *dlqWorld) workerSend(t time.Duration, live bool) {
	w.at(t, func() {
		w.msgs = append(w.msgs, &dlqMessage{enqueued: t, jobLive: live})
		w.sendsMinute++
		w.access(t)
	})
}

// redrive is SQS moving a message no worker ever saw (not counted as
// sent), first enqueued age ago in the job queue.
func (w *dlqWorld) redrive(t, age time.Duration, live bool) {
	w.at(t, func() { w.msgs = append(w.msgs, &dlqMessage{enqueued: t - age, jobLive: live}) })
}

// replay is `aijobs replay --from dlq` at t: it receives every visible
// message (hiding it 15 minutes), then one message every 20 s deletes the
// first `handled` (whose jobs it re-sent) and restores the rest. killAt >
// 0 kills it then: what it has not deleted or restored stays hidden until
// the 15 minutes end. resentBeforeKill marks the message being handled at
// the kill as replayed (its job re-sent, its delete never made).
func (w *dlqWorld) replay(t time.Duration, handled int, killAt time.Duration, resentBeforeKill bool) {
	w.at(t, func() {
		var got []*dlqMessage
		for _, m := range w.msgs {
			if !m.gone && m.hiddenUntil <= t {
				m.hiddenUntil = t + 15*time.Minute
				got = append(got, m)
			}
		}
		w.access(t)
		for i, m := range got {
			step := t + time.Duration(i+1)*20*time.Second
			if killAt > 0 && step >= killAt {
				if resentBeforeKill && i < handled {
					w.at(step-10*time.Second, func() { m.replayed, m.jobLive = true, true })
				}
				return
			}
			w.at(step, func() {
				if i < handled {
					m.gone = true
					w.delsMinute++
				} else {
					m.hiddenUntil = step
				}
				w.access(step)
			})
		}
	})
}

func (w *dlqWorld) active(now time.Duration) bool {
	for _, m := range w.msgs {
		if !m.gone {
			return true
		}
	}
	return now-w.lastAccess < 6*time.Hour
}

// run simulates [0, end].
func (w *dlqWorld) run(end time.Duration) {
	for now := time.Duration(0); now <= end; now += time.Second {
		if w.sweeps && now >= w.sweepPhase && (now-w.sweepPhase)%w.s.ReconcileEvery == 0 {
			w.sweep(now)
		}
		for _, f := range w.events[now] {
			f()
		}
		for _, m := range w.msgs {
			if !m.gone && now >= m.enqueued+w.s.DLQRetention {
				m.gone = true // retention: expired, no API call, not a delete
			}
		}
		if now > 0 && now%time.Minute == 0 {
			w.publish(now)
		}
	}
}

// sweep is one reconciler run's pass over the DLQ.
func (w *dlqWorld) sweep(now time.Duration) {
	marked := 0.0
	var fresh []*dlqMessage
	for _, m := range w.msgs {
		if m.gone || m.hiddenUntil > now {
			continue
		}
		m.hiddenUntil = now + 30*time.Second
		if m.jobLive && !m.replayed {
			m.jobLive = false
			marked++
			if w.resends {
				m.gone = true
				w.delsMinute++
				w.sendsMinute++
				fresh = append(fresh, &dlqMessage{enqueued: now})
			}
		}
	}
	w.msgs = append(w.msgs, fresh...)
	w.access(now)
	at := now + w.sweepRun
	w.store.put(w.marked, at, at+w.emfDelay, marked)
}

// publish is SQS's datapoints for the minute ending at now.
func (w *dlqWorld) publish(now time.Duration) {
	minute := now - time.Minute
	if !w.active(now) {
		w.asleep = true
		w.sendsMinute, w.delsMinute = 0, 0
		return
	}
	if w.asleep {
		w.asleep, w.woke = false, minute
	}
	visible := now + w.publishLag
	if late := w.woke + w.wakeDelay; minute < late && visible < late {
		visible = late
	}
	var vis, inflight float64
	for _, m := range w.msgs {
		switch {
		case m.gone:
		case m.hiddenUntil > now:
			inflight++
		default:
			vis++
		}
	}
	if w.blips[minute] {
		inflight++
	}
	w.store.put(w.visible, minute, visible, vis)
	if inflight > 0 {
		w.store.put(w.notVisible, minute, visible, inflight)
	}
	w.store.put(w.sent, minute, visible, w.sendsMinute)
	w.store.put(w.deleted, minute, visible, w.delsMinute)
	w.sendsMinute, w.delsMinute = 0, 0
}

// blipEvery makes NotVisible read one message too many in the minutes
// from, from+step, ... before to.
func (w *dlqWorld) blipEvery(from, to, step time.Duration) {
	for m := from; m < to; m += step {
		w.blips[m] = true
	}
}

// oldDeadLetters puts n dead letters, already swept (their jobs marked),
// in the DLQ before the simulation starts.
func (w *dlqWorld) oldDeadLetters(n int, enqueued time.Duration) {
	for range n {
		w.msgs = append(w.msgs, &dlqMessage{enqueued: enqueued})
	}
}

// dlqCase is one scenario: what happens, and whether and how soon the
// alarm must fire.
type dlqCase struct {
	name  string
	setup func(w *dlqWorld)
	// arrival is when the one message that must raise the alarm arrives
	// (0: nothing may raise it); bound is how long after it the alarm is
	// in ALARM at the latest.
	arrival, bound, end time.Duration
	// world builds the simulation; nil is the job DLQ's.
	world func(*testing.T, *synthesized) *dlqWorld
}

// check runs one scenario against an alarm of the synthesized stack.
func (c dlqCase) check(t *testing.T, s *synthesized, alarmID string) {
	t.Helper()
	newWorld := c.world
	if newWorld == nil {
		newWorld = newDLQWorld
	}
	w := newWorld(t, s)
	c.setup(w)
	w.run(c.end)
	a := parseAlarm(t, alarm(t, s, alarmID))
	got := a.run(t, w.store, time.Minute, c.end)
	var fired time.Duration = -1
	for _, tr := range got {
		if tr.state == "ALARM" {
			fired = tr.at
			break
		}
	}
	switch {
	case c.arrival == 0 && fired >= 0:
		t.Errorf("%s: %s fired at %s with no arrival (transitions %v)", c.name, alarmID, fired, got)
	case c.arrival > 0 && fired < 0:
		t.Errorf("%s: %s never fired for the arrival at %s", c.name, alarmID, c.arrival)
	case c.arrival > 0 && fired < c.arrival:
		t.Errorf("%s: %s fired at %s, before the arrival at %s", c.name, alarmID, fired, c.arrival)
	case c.arrival > 0 && fired > c.arrival+c.bound:
		t.Errorf("%s: %s fired at %s, %s after the arrival at %s: later than the bound %s", c.name, alarmID, fired, fired-c.arrival, c.arrival, c.bound)
	case c.arrival > 0:
		t.Logf("%s: %s fired %s after the arrival", c.name, alarmID, fired-c.arrival)
	}
}

// The cases every DLQ alarm is held to (issue 14): a single arrival into an
// empty DLQ, an arrival while a replay deletes older dead letters, an
// arrival after six idle hours whose metrics come 15 minutes late, a
// replay hiding and restoring messages (also killed), messages expiring.
func TestDLQArrivalAlarmSimulation(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	const day = 24 * time.Hour
	// A worker's send: counted (NumberOfMessagesSent) in its minute,
	// published a minute later, seen by the next evaluation.
	sendBound := 3 * time.Minute
	// The same into a DLQ asleep for six hours: its metrics come up to 15
	// minutes late.
	idleSendBound := 15*time.Minute + sendBound
	// A redrive (no send): the next sweep marks its job, and the EMF line
	// becomes a metric emfDelay later.
	markBound := func(emfDelay time.Duration) time.Duration {
		return st.ReconcileEvery + time.Minute + emfDelay + 2*time.Minute
	}
	old := func(w *dlqWorld) { w.oldDeadLetters(5, -2*day) }
	cases := []dlqCase{
		{name: "a worker's send into an empty DLQ", setup: func(w *dlqWorld) { w.workerSend(2*time.Hour+17*time.Second, true) },
			arrival: 2*time.Hour + 17*time.Second, bound: sendBound, end: 4 * time.Hour},
		{name: "a poison message into an empty DLQ", setup: func(w *dlqWorld) { w.workerSend(2*time.Hour+59*time.Second, false) },
			arrival: 2*time.Hour + 59*time.Second, bound: sendBound, end: 4 * time.Hour},
		{name: "a redrive into an empty DLQ", setup: func(w *dlqWorld) { w.redrive(2*time.Hour+7*time.Minute+3*time.Second, 3*time.Hour, true) },
			arrival: 2*time.Hour + 7*time.Minute + 3*time.Second, bound: markBound(time.Minute), end: 4 * time.Hour},
		{name: "a redrive, EMF 15 minutes late", setup: func(w *dlqWorld) {
			w.emfDelay = 15 * time.Minute
			w.redrive(2*time.Hour+1*time.Minute, 3*time.Hour, true)
		}, arrival: 2*time.Hour + 1*time.Minute, bound: markBound(15 * time.Minute), end: 4 * time.Hour},
		{name: "a send while a replay deletes older dead letters", setup: func(w *dlqWorld) {
			old(w)
			w.replay(3*time.Hour, 5, 0, false)
			w.workerSend(3*time.Hour+30*time.Second, true)
		}, arrival: 3*time.Hour + 30*time.Second, bound: sendBound, end: 5 * time.Hour},
		{name: "a redrive while a replay deletes older dead letters", setup: func(w *dlqWorld) {
			old(w)
			w.replay(3*time.Hour, 5, 0, false)
			w.redrive(3*time.Hour+40*time.Second, time.Hour, true)
		}, arrival: 3*time.Hour + 40*time.Second, bound: markBound(time.Minute), end: 5 * time.Hour},
		{name: "a send after six idle hours, metrics 15 minutes late", setup: func(w *dlqWorld) {
			w.sweeps = false // nothing touches the DLQ: it falls asleep
			w.lastAccess = -time.Hour
			w.workerSend(7*time.Hour+12*time.Second, true)
		}, arrival: 7*time.Hour + 12*time.Second, bound: idleSendBound, end: 9 * time.Hour},
		{name: "a redrive after six idle hours, metrics 15 minutes late", setup: func(w *dlqWorld) {
			w.sweeps = false
			w.lastAccess = -time.Hour
			w.sweepPhase = 7*time.Hour + 3*time.Minute // the reconciler (re)starts then
			w.at(w.sweepPhase-time.Second, func() { w.sweeps = true })
			w.redrive(7*time.Hour+12*time.Second, 3*time.Hour, true)
		}, arrival: 7*time.Hour + 12*time.Second, bound: 3*time.Minute + markBound(time.Minute), end: 9 * time.Hour},
		{name: "an arrival while older dead letters expire", setup: func(w *dlqWorld) {
			w.oldDeadLetters(5, 2*time.Hour-st.DLQRetention) // all expire at 2h
			w.redrive(2*time.Hour, time.Hour, true)
		}, arrival: 2 * time.Hour, bound: markBound(time.Minute), end: 4 * time.Hour},
		{name: "old dead letters, swept every period for a day", setup: old, end: day},
		{name: "a replay that restores what it did not handle", setup: func(w *dlqWorld) {
			old(w)
			w.replay(3*time.Hour, 2, 0, false)
		}, end: 6 * time.Hour},
		{name: "a replay killed at once: everything returns after 15 minutes", setup: func(w *dlqWorld) {
			old(w)
			w.replay(3*time.Hour, 5, 3*time.Hour+time.Second, false)
		}, end: 6 * time.Hour},
		{name: "a replay killed after a delete and a re-send", setup: func(w *dlqWorld) {
			old(w)
			w.replay(3*time.Hour, 5, 3*time.Hour+50*time.Second, true)
		}, end: 6 * time.Hour},
		{name: "dead letters expiring", setup: func(w *dlqWorld) { w.oldDeadLetters(5, 2*time.Hour-st.DLQRetention) }, end: 6 * time.Hour},
		// Not seen by this alarm, by design (docs/deploy.md): SQS moved a
		// message whose job had already finished (nothing to mark), or a
		// replay running at that moment took the message and handled it
		// before any sweep saw it. DeadLettersWaiting catches the first.
		{name: "a redrive of a finished job's duplicate", setup: func(w *dlqWorld) { w.redrive(2*time.Hour, time.Hour, false) }, end: 4 * time.Hour},
		{name: "a redrive a running replay handles before any sweep", setup: func(w *dlqWorld) {
			old(w)
			w.redrive(3*time.Hour-10*time.Second, time.Hour, true)
			w.replay(3*time.Hour, 6, 0, false)
		}, end: 5 * time.Hour},
		{name: "NotVisible reads a message that is not there", setup: func(w *dlqWorld) { w.blipEvery(time.Hour, 5*time.Hour, 37*time.Minute) },
			end: 6 * time.Hour},
	}
	for _, c := range cases {
		c.check(t, s, "DlqArrivals")
	}
}

// The callback DLQ's arrival alarm, CallbackDlqArrivals, over the same
// SQS: the callback queue redrives a notice into its DLQ after
// CallbackMaxReceives receives, and "a message sent to a dead-letter queue
// as a result of a failed processing attempt isn't captured by" the DLQ's
// NumberOfMessagesSent (SQS developer guide, sqs-dead-letter-queues.html;
// the CloudWatch metrics table, sqs-available-cloudwatch-metrics.html,
// says the same of NumberOfMessagesSent): a notifier crashing on a notice
// every receive was silent. The notifier's sweep counts and re-sends it;
// without the sweep the same redrive raises nothing (the last case, which
// is how the alarm behaved before the sweep).
func TestCallbackDLQArrivalAlarmSimulation(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	const day = 24 * time.Hour
	sendBound := 3 * time.Minute
	// The next sweep re-sends it (counted in its minute, published a
	// minute later, seen by the next evaluation).
	sweepBound := st.ReconcileEvery + sendBound
	old := func(w *dlqWorld) { w.oldDeadLetters(5, -2*day) }
	cb := newCallbackDLQWorld
	cases := []dlqCase{
		{name: "a notice the notifier gave up", setup: func(w *dlqWorld) { w.workerSend(2*time.Hour+17*time.Second, false) },
			arrival: 2*time.Hour + 17*time.Second, bound: sendBound, end: 4 * time.Hour, world: cb},
		{name: "a notice SQS redrove into an empty callback DLQ", setup: func(w *dlqWorld) { w.redrive(2*time.Hour+7*time.Minute+3*time.Second, 30*time.Hour, true) },
			arrival: 2*time.Hour + 7*time.Minute + 3*time.Second, bound: sweepBound, end: 4 * time.Hour, world: cb},
		{name: "a redrive, the sweep's EMF 15 minutes late", setup: func(w *dlqWorld) {
			w.emfDelay = 15 * time.Minute
			w.redrive(2*time.Hour+time.Minute, 30*time.Hour, true)
		}, arrival: 2*time.Hour + time.Minute, bound: sweepBound, end: 4 * time.Hour, world: cb},
		{name: "a redrive beside old dead letters", setup: func(w *dlqWorld) {
			old(w)
			w.redrive(3*time.Hour+40*time.Second, time.Hour, true)
		}, arrival: 3*time.Hour + 40*time.Second, bound: sweepBound, end: 5 * time.Hour, world: cb},
		{name: "a redrive after six idle hours, metrics 15 minutes late", setup: func(w *dlqWorld) {
			w.sweeps = false
			w.lastAccess = -time.Hour
			w.sweepPhase = 7*time.Hour + 3*time.Minute // the notifier's schedule (re)starts then
			w.at(w.sweepPhase-time.Second, func() { w.sweeps = true })
			w.redrive(7*time.Hour+12*time.Second, 3*time.Hour, true)
		}, arrival: 7*time.Hour + 12*time.Second, bound: 3*time.Minute + st.ReconcileEvery + 15*time.Minute + sendBound, end: 9 * time.Hour, world: cb},
		{name: "an arrival while older dead letters expire", setup: func(w *dlqWorld) {
			w.oldDeadLetters(5, 2*time.Hour-st.DLQRetention)
			w.redrive(2*time.Hour, time.Hour, true)
		}, arrival: 2 * time.Hour, bound: sweepBound, end: 4 * time.Hour, world: cb},
		// The sweep's copies are marked: swept again every period, they
		// count once.
		{name: "a redrive, then a day of sweeps", setup: func(w *dlqWorld) { w.redrive(time.Hour, time.Hour, true) },
			arrival: time.Hour, bound: sweepBound, end: day, world: cb},
		{name: "old dead letters, swept every period for a day", setup: old, end: day, world: cb},
		{name: "dead letters expiring", setup: func(w *dlqWorld) { w.oldDeadLetters(5, 2*time.Hour-st.DLQRetention) }, end: 6 * time.Hour, world: cb},
		{name: "NotVisible reads a message that is not there", setup: func(w *dlqWorld) { w.blipEvery(time.Hour, 5*time.Hour, 37*time.Minute) },
			end: 6 * time.Hour, world: cb},
		// Without the sweep: SQS publishes nothing an arrival alarm reads.
		{name: "a redrive nobody sweeps is silent", setup: func(w *dlqWorld) {
			w.sweeps = false
			w.redrive(2*time.Hour, time.Hour, true)
		}, end: 6 * time.Hour, world: cb},
	}
	for _, c := range cases {
		c.check(t, s, "CallbackDlqArrivals")
	}
}

// The backstop: dead letters that wait (nobody replayed or purged them),
// including any arrival the arrival alarm could not see.
func TestDeadLettersWaitingSimulation(t *testing.T) {
	s := defaults(t)
	const bound = 6*time.Hour + 20*time.Minute
	cases := []dlqCase{
		{name: "a dead letter nobody handles", setup: func(w *dlqWorld) { w.workerSend(time.Hour+5*time.Second, true) },
			arrival: time.Hour + 5*time.Second, bound: bound, end: 9 * time.Hour},
		{name: "a redrive into a DLQ nobody sweeps", setup: func(w *dlqWorld) {
			w.sweeps = false
			w.lastAccess = -time.Hour
			w.redrive(7*time.Hour+12*time.Second, 3*time.Hour, true)
		}, arrival: 7*time.Hour + 12*time.Second, bound: bound, end: 15 * time.Hour},
		{name: "a redrive of a finished job's duplicate (no job to mark)", setup: func(w *dlqWorld) { w.redrive(time.Hour, time.Hour, false) },
			arrival: time.Hour, bound: bound, end: 9 * time.Hour},
		{name: "a replay killed at once does not count as handling", setup: func(w *dlqWorld) {
			w.workerSend(time.Hour, true)
			w.replay(2*time.Hour, 1, 2*time.Hour+time.Second, false)
		}, arrival: time.Hour, bound: bound, end: 9 * time.Hour},
		{name: "dead letters replayed within the hour", setup: func(w *dlqWorld) {
			w.workerSend(time.Hour, true)
			w.redrive(time.Hour+2*time.Minute, time.Hour, true)
			w.replay(time.Hour+50*time.Minute, 2, 0, false)
		}, end: 12 * time.Hour},
		{name: "NotVisible reads a message that is not there, every hour", setup: func(w *dlqWorld) { w.blipEvery(time.Hour, 11*time.Hour, time.Hour) },
			end: 12 * time.Hour},
	}
	for _, c := range cases {
		c.check(t, s, "DeadLettersWaiting")
	}
}

// After its dead letters are gone, the backstop recovers, and says so.
func TestDeadLettersWaitingRecovers(t *testing.T) {
	s := defaults(t)
	w := newDLQWorld(t, s)
	w.workerSend(time.Hour, true)
	w.replay(8*time.Hour, 1, 0, false)
	w.run(12 * time.Hour)
	got := parseAlarm(t, alarm(t, s, "DeadLettersWaiting")).run(t, w.store, time.Minute, 12*time.Hour)
	if len(got) != 2 || got[0].state != "ALARM" || got[1].state != "OK" || got[1].at > 9*time.Hour+time.Minute {
		t.Errorf("transitions %v, want ALARM and, within an hour of the replay at 8h, OK", got)
	}
}

// Why the backstop is not ApproximateAgeOfOldestMessage: SQS leaves a
// message that was "received three or more times and not deleted" out of
// that metric, which then reflects the next message that was not
// (sqs-available-cloudwatch-metrics.html), and the reconciler's sweep
// receives every dead letter every ReconcileEvery without deleting it. A
// dead letter's age therefore vanishes from the metric after three sweeps,
// and an age alarm at any threshold above that never fires.
func TestAgeOfOldestMessageIsBlindToSweptDeadLetters(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	w := newDLQWorld(t, s)
	w.workerSend(time.Hour, true)
	w.run(10 * time.Hour)
	// the age SQS would publish, per minute: receives counted from the sweeps
	ages := metricStore{}
	key := metricKey("AWS/SQS", "ApproximateAgeOfOldestMessage", nil)
	for minute := time.Hour; minute < 10*time.Hour; minute += time.Minute {
		sweeps := 0
		for at := w.sweepPhase; at <= minute; at += st.ReconcileEvery {
			if at >= time.Hour {
				sweeps++
			}
		}
		age := 0.0
		if sweeps < 3 {
			age = (minute - time.Hour).Seconds()
		}
		ages.put(key, minute, minute+time.Minute, age)
	}
	a := alarmDef{name: "age", period: 5 * time.Minute, evaluations: 1, toAlarm: 1, threshold: time.Hour.Seconds(),
		comparison: "GreaterThanOrEqualToThreshold", missing: "notBreaching",
		metrics: map[string]metricQuery{"": {key: key, stat: "Maximum"}}}
	if got := a.run(t, ages, time.Minute, 10*time.Hour); len(got) != 0 {
		t.Errorf("an age alarm at 1 hour fired (%v); the documented exclusion says it cannot", got)
	}
	var oldest float64
	for _, smp := range ages[key] {
		oldest = max(oldest, smp.value)
	}
	if oldest > (3 * st.ReconcileEvery).Seconds() {
		t.Errorf("the modelled age reached %s", time.Duration(oldest)*time.Second)
	}
}

// The world itself: what it publishes for a simple history.
func TestDLQWorld(t *testing.T) {
	s := defaults(t)
	w := newDLQWorld(t, s)
	w.sweeps = false
	w.lastAccess = -7 * time.Hour
	w.workerSend(10*time.Minute+5*time.Second, true)
	w.redrive(20*time.Minute, time.Hour, true)
	w.run(40 * time.Minute)
	points := func(key string) string {
		var out []string
		for _, smp := range w.store[key] {
			out = append(out, fmt.Sprintf("%v=%v@%v", smp.at, smp.value, smp.visible))
		}
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	sent := points(w.sent)
	// asleep until the send at 10m: nothing before; woken at minute 10m,
	// whose datapoints arrive 15 minutes late
	if want := "10m0s=1@25m0s"; len(w.store[w.sent]) == 0 || fmt.Sprintf("%v=%v@%v", w.store[w.sent][0].at, w.store[w.sent][0].value, w.store[w.sent][0].visible) != want {
		t.Errorf("sent %s, want it to start with %s", sent, want)
	}
	last := w.store[w.visible][len(w.store[w.visible])-1]
	if last.at != 39*time.Minute || last.value != 2 || last.visible != 41*time.Minute {
		t.Errorf("last visible datapoint %+v, want 2 messages at 39m, visible at 41m", last)
	}
	if n := len(w.store[w.marked]); n != 0 {
		t.Errorf("%d DeadLetteredJobs datapoints without a reconciler", n)
	}
}
