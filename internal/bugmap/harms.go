package bugmap

import "github.com/mcpconform/mcpconform/internal/judge"

// Harms maps a bug switch to the harms it does the gateway's users, as the
// model names them: explore catches a switch only with a violated check of
// one of these harms, not with whatever else fails once it is on. The
// first is the bug's own harm; those after it are how the same fault shows
// in the history too (a second dispatch is charged twice as well; a
// result where a refusal was due is also a dispatch nothing allowed).
var Harms = map[string][]judge.Harm{
	"random-unkeyed-key": {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	// A retry across a bucket boundary run as a new operation: run and
	// charged again, or refused for funds the first charge left short.
	"floor-bucket":       {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmWrongRefusal},
	"principal-unbound":  {judge.HarmCrossScope},
	"replay-before-iga":  {judge.HarmCrossScope},
	"readonly-collapsed": {judge.HarmWrongRefusal, judge.HarmLostOutcome},
	// lookup-before-reserve: what a dispatch whose record comes after it
	// does to the ledger (refusals that keep their charge) shows too.
	"lookup-before-reserve": {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmWrongAmount},
	"stale-lock-no-fence":   {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	"release-unpinned":      {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	// select-for-update-sqlite: the holder's plain read lets a takeover in.
	"select-for-update-sqlite": {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	"lock-timeout-internal":    {judge.HarmWrongRefusal},
	"replay-debits":            {judge.HarmDoubleCharge},
	"refund-missing":           {judge.HarmWrongAmount, judge.HarmDoubleCharge},
	// window-ignores-ttl: a replay promised past the auto permit's life
	// ends refused for the permit the client never saw.
	"window-ignores-ttl":          {judge.HarmWrongRefusal, judge.HarmLostOutcome, judge.HarmDoubleDispatch},
	"permit-expiry-blocks-replay": {judge.HarmLostOutcome, judge.HarmWrongRefusal},
	"takeover-charged":            {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	"takeover-trusts-read":        {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	"no-idempotency":              {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmLostOutcome, judge.HarmWrongRefusal},
	"key-scope-tool":              {judge.HarmCrossScope, judge.HarmWrongAmount}, // the other tool's call billed at the first's price
	"key-scope-apikey":            {judge.HarmCrossScope},
	"key-scope-wallet":            {judge.HarmCrossScope},
	"cancel-forgets":              {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	"cancel-reaches-upstream":     {judge.HarmLostOutcome},
	"refund-at-current-price":     {judge.HarmWrongAmount},
	"permit-unscoped":             {judge.HarmCrossScope},
	"principal-per-session":       {judge.HarmCrossScope},
	"removed-tool-takeover":       {judge.HarmWrongRefusal, judge.HarmWrongAmount, judge.HarmLostOutcome},
	"permit-skips-key-rules":      {judge.HarmWrongRefusal, judge.HarmLostOutcome},
	"slot-lookup-by-bucket":       {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	"running-slot-expires":        {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmLostOutcome},
	"stalled-permit-expired":      {judge.HarmWrongRefusal},
	"uncertain-in-progress":       {judge.HarmWrongRefusal, judge.HarmLostOutcome},
	"settle-overwritten":          {judge.HarmLostOutcome, judge.HarmWrongAmount, judge.HarmDoubleDispatch}, // the woken holder runs the tool the settlement decided
	"settle-refund-unwritten":     {judge.HarmWrongAmount, judge.HarmDoubleCharge},
	// uncertain-refunded: a result left unpaid; an outcome_unknown naming
	// a debit already refunded is a refusal the contract does not allow.
	"uncertain-refunded":          {judge.HarmWrongAmount, judge.HarmWrongRefusal},
	"uncertain-early":             {judge.HarmWrongRefusal},
	"double-price":                {judge.HarmWrongAmount},
	"refusal-fee":                 {judge.HarmWrongAmount},
	"fresh-receipt-on-replay":     {judge.HarmLostOutcome},
	"late-debit":                  {judge.HarmDoubleCharge, judge.HarmWrongAmount},
	"replay-revalidates":          {judge.HarmDoubleDispatch},
	"replay-unmarked-undelivered": {judge.HarmLostOutcome},
	"removed-tool-runs":           {judge.HarmWrongRefusal, judge.HarmLostOutcome},
	"tool-entries-unversioned":    {judge.HarmWrongRefusal, judge.HarmWrongAmount, judge.HarmLostOutcome},
	"foreign-content":             {judge.HarmLostOutcome, judge.HarmCrossScope},
	"key-scope-billing":           {judge.HarmWrongAmount},
	"parse-error-500":             {judge.HarmWrongRefusal},
	"key-reuse-replays":           {judge.HarmLostOutcome},
	"rounds-charged":              {judge.HarmWrongAmount, judge.HarmDoubleCharge},
	// rounds-replay-reruns: the rerun round, a record of its own, may be
	// refused as much as run again.
	"rounds-replay-reruns":  {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmLostOutcome, judge.HarmWrongRefusal},
	"rounds-store-question": {judge.HarmLostOutcome},
	// A charge kept for a refused call, the model cannot tie to any
	// operation: with one that ran beside it, a double charge.
	"capability-refusal-kept":   {judge.HarmWrongAmount, judge.HarmDoubleCharge},
	"capability-refund-twice":   {judge.HarmWrongAmount},
	"replay-drops-structured":   {judge.HarmLostOutcome},
	"replay-resulttype-missing": {judge.HarmShape},
	"session-content-dropped":   {judge.HarmShape, judge.HarmLostOutcome},
	"rounds-to-legacy-client":   {judge.HarmShape, judge.HarmLostOutcome},
	"refusals-retryable":        {judge.HarmWrongRefusal},
	"rounds-fingerprinted":      {judge.HarmWrongRefusal},
	// The switches whose harm shows only in a crossed dimension.
	"principal-unbound-stateless":   {judge.HarmCrossScope, judge.HarmLostOutcome},
	"principal-fail-open-stateless": {judge.HarmWrongRefusal, judge.HarmLostOutcome},
	// Where the tool was removed while its holder stalled, the holder's
	// unfenced charge finds no tool and the call is answered internal_error.
	"keyed-takeover-unfenced": {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmLostOutcome, judge.HarmWrongRefusal},
	// A retry on the other process is new work there: run again, or, when
	// the wallet cannot pay for new work, refused where a replay is owed.
	"keyed-records-per-process": {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmLostOutcome, judge.HarmWrongRefusal},
	"finished-key-expires":      {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmLostOutcome},
	"claim-lapses":              {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	// The switches whose harm shows only in a shape of key, arguments,
	// balance or upstream answer. Two keys taken for one: the second call
	// is refused as a reuse (or answered with the first one's result).
	"key-case-folded":       {judge.HarmWrongRefusal, judge.HarmLostOutcome, judge.HarmWrongAmount},
	"key-truncated":         {judge.HarmWrongRefusal, judge.HarmLostOutcome, judge.HarmWrongAmount},
	"fingerprint-shallow":   {judge.HarmLostOutcome},
	"fingerprint-raw-bytes": {judge.HarmWrongRefusal, judge.HarmLostOutcome, judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	// A list reordered taken for the same arguments: the other operation's
	// result served where a refusal (keyed) or a run (unkeyed) was due.
	"fingerprint-sorted-lists": {judge.HarmLostOutcome, judge.HarmWrongRefusal, judge.HarmWrongAmount},
	// A retry inside the window run as a new operation: run and charged
	// again, or refused for funds the first charge left short.
	"window-whole-seconds":   {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmWrongRefusal},
	"upstream-error-charged": {judge.HarmDoubleCharge, judge.HarmWrongAmount},
	"tool-error-not-stored":  {judge.HarmDoubleDispatch, judge.HarmDoubleCharge},
	"funds-boundary":         {judge.HarmWrongRefusal, judge.HarmWrongAmount},
	"large-args-unbound":     {judge.HarmCrossScope, judge.HarmLostOutcome, judge.HarmWrongAmount},
	"large-args-unstored":    {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmWrongAmount},
	// Operations that each ran once, more than the wallet could pay for.
	"funds-unlocked": {judge.HarmWrongAmount, judge.HarmDoubleDispatch},
	// A retry refused where it must run: nothing ran, nothing was kept.
	"permit-refund-kept": {judge.HarmWrongRefusal, judge.HarmLostOutcome},
	// A key forgotten inside its retention: the retry runs again.
	"purge-inside-window": {judge.HarmDoubleDispatch, judge.HarmDoubleCharge, judge.HarmLostOutcome},
	// purge-uncertain: the retry is charged again for an operation whose
	// debit stands; where the holder had dispatched, it runs twice too.
	"purge-uncertain": {judge.HarmDoubleCharge, judge.HarmWrongRefusal, judge.HarmDoubleDispatch},
	// A reservation nobody will charge kept in progress for ever: the
	// client never gets its operation run.
	"stale-reservation-kept": {judge.HarmLostOutcome, judge.HarmWrongRefusal},
}
