package tenant

import (
	"fmt"
	"testing"
)

// benchConfig is n tenants of three prefixes each, and sources that
// miss, hit and nearly hit them.
func benchConfig(b *testing.B, n int) (*Config, []string) {
	m := make(map[string]Tenant, n)
	var sources []string
	for i := range n {
		name := fmt.Sprintf("team-%d", i)
		m[name] = Tenant{Sources: []string{name + "/", fmt.Sprintf("urn:%d:", i), fmt.Sprintf("org/%d/", i)}}
		sources = append(sources, name+"/svc/1", fmt.Sprintf("urn:%d:dev", i), fmt.Sprintf("org/%dx/", i))
	}
	c, err := New(m)
	if err != nil {
		b.Fatal(err)
	}
	return c, sources
}

// BenchmarkOwner: one binary search per event, whatever the number of
// tenants.
func BenchmarkOwner(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprint(n, " tenants"), func(b *testing.B) {
			c, sources := benchConfig(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Owns("team-7", sources[i%len(sources)])
			}
		})
	}
}
