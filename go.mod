module github.com/shardline/shardline

go 1.26.8
