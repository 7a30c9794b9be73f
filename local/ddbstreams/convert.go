package ddbstreams

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Record turns a stream record as GetRecords returns it into the record
// Lambda hands a function.
func Record(r st.Record, streamARN string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		EventName:      string(r.EventName),
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: streamARN,
	}
	if r.EventID != nil {
		out.EventID = *r.EventID
	}
	if r.AwsRegion != nil {
		out.AWSRegion = *r.AwsRegion
	}
	d := r.Dynamodb
	if d == nil {
		return out, fmt.Errorf("stream record %s has no dynamodb body", out.EventID)
	}
	var err error
	if out.Change.Keys, err = image(d.Keys); err != nil {
		return out, err
	}
	if out.Change.NewImage, err = image(d.NewImage); err != nil {
		return out, err
	}
	if out.Change.OldImage, err = image(d.OldImage); err != nil {
		return out, err
	}
	if d.SequenceNumber != nil {
		out.Change.SequenceNumber = *d.SequenceNumber
	}
	if d.SizeBytes != nil {
		out.Change.SizeBytes = *d.SizeBytes
	}
	if d.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	out.Change.StreamViewType = string(d.StreamViewType)
	return out, nil
}

func image(m map[string]st.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		a, err := value(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = a
	}
	return out, nil
}

func value(v st.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *st.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *st.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *st.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *st.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *st.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *st.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *st.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *st.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *st.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			a, err := value(e)
			if err != nil {
				return a, err
			}
			l[i] = a
		}
		return events.NewListAttribute(l), nil
	case *st.AttributeValueMemberM:
		m, err := image(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unknown attribute value %T", v)
}
