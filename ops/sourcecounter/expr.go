package sourcecounter

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// expr builds one request's expressions with short placeholders (#0, :0),
// so that an update fits many counters in DynamoDB's 4 KB.
type expr struct {
	names      map[string]string
	values     map[string]types.AttributeValue
	adds, sets []string
	conds      []string
	byName     map[string]string
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}, byName: map[string]string{}}
}

// name is the placeholder of attribute n.
func (e *expr) name(n string) string {
	if p, ok := e.byName[n]; ok {
		return p
	}
	p := "#" + strconv.Itoa(len(e.names))
	e.names[p], e.byName[n] = n, p
	return p
}

func (e *expr) value(v types.AttributeValue) string {
	p := ":" + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

func (e *expr) num(s string) string { return e.value(&types.AttributeValueMemberN{Value: s}) }
func (e *expr) str(s string) string { return e.value(&types.AttributeValueMemberS{Value: s}) }

func (e *expr) add(name, val string) { e.adds = append(e.adds, name+" "+val) }
func (e *expr) set(name, val string) { e.sets = append(e.sets, name+" = "+val) }
func (e *expr) cond(c string)        { e.conds = append(e.conds, c) }

func (e *expr) update() string {
	var b strings.Builder
	if len(e.adds) > 0 {
		b.WriteString("ADD " + joinComma(e.adds))
	}
	if len(e.sets) > 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("SET " + joinComma(e.sets))
	}
	return b.String()
}

func (e *expr) condition() string { return strings.Join(e.conds, " AND ") }

func joinComma(s []string) string { return strings.Join(s, ", ") }
