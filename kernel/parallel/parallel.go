// Package parallel runs a bounded number of calls at once.
package parallel

import "sync"

// Each runs fn(0..n-1), at most workers at a time, and returns when all
// have returned.
func Each(n, workers int, fn func(i int)) {
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
