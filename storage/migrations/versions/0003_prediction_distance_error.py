"""prediction distance error stored at import (issue 15, filled by the import work)

Adds ``prediction.distance_error_km`` and ``prediction.refused``, fills them for the rows
already stored, and a covering index for the leaderboard's read.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 11:30:00
"""

import math

from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

# A frozen copy of the distance rule of workbench/metrics/distance.py as of this revision:
# storage never imports the domain (layers), and a migration must give the same result whatever
# the application code later becomes. Rows written from now on get their distance from the
# importers (workbench.importing.prediction_rows).
_REFUSALS = frozenset({"0", "-1", "", "null", "none", "n/a", "na", "unknown", "unable", "cannot", "0.0"})
_REFUSAL_KM = 10_000.0
_BATCH = 2000
_METRIC_INDEX = (
    'alm_run_id', 'distance_error_km', 'refused', 'true_city', 'true_country', 'true_continent',
    'predicted_city', 'predicted_country', 'predicted_continent',
)


def _refused(value):
    # Stored predicted values are text or NULL (the importers keep them as written).
    return value is None or str(value).strip().lower() in _REFUSALS


def _number(value):
    if value is None:
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _distance_km(geodesic, true_lat, true_lon, pred_lat, pred_lon):
    if _refused(pred_lat) or _refused(pred_lon):
        return _REFUSAL_KM
    coords = [_number(v) for v in (true_lat, true_lon, pred_lat, pred_lon)]
    if any(c is None for c in coords) or abs(coords[0]) > 90 or abs(coords[2]) > 90:
        return None
    return geodesic.Inverse(*coords, geodesic.DISTANCE)["s12"] / 1000.0


def upgrade() -> None:
    with op.batch_alter_table('prediction', schema=None) as batch_op:
        batch_op.add_column(sa.Column('distance_error_km', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('refused', sa.Boolean(), nullable=True))

    from geographiclib.geodesic import Geodesic

    bind = op.get_bind()
    prediction = sa.table(
        'prediction',
        sa.column('id', sa.Integer),
        sa.column('true_latitude', sa.Float),
        sa.column('true_longitude', sa.Float),
        sa.column('predicted_latitude', sa.String),
        sa.column('predicted_longitude', sa.String),
        sa.column('predicted_city', sa.String),
        sa.column('predicted_country', sa.String),
        sa.column('predicted_continent', sa.String),
        sa.column('distance_error_km', sa.Float),
        sa.column('refused', sa.Boolean),
    )
    update = (
        sa.update(prediction)
        .where(prediction.c.id == sa.bindparam('row_id'))
        .values(distance_error_km=sa.bindparam('km'), refused=sa.bindparam('no'))
    )
    last_id = 0
    # Batches by primary key keep memory flat on projects with millions of predictions.
    while True:
        rows = bind.execute(
            sa.select(
                prediction.c.id,
                prediction.c.true_latitude,
                prediction.c.true_longitude,
                prediction.c.predicted_latitude,
                prediction.c.predicted_longitude,
                prediction.c.predicted_city,
                prediction.c.predicted_country,
                prediction.c.predicted_continent,
            )
            .where(prediction.c.id > last_id)
            .order_by(prediction.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        values = [
            {
                'row_id': row[0],
                'km': _distance_km(Geodesic.WGS84, *row[1:5]),
                'no': any(_refused(value) for value in row[3:8]),
            }
            for row in rows
        ]
        bind.execute(update, values)
        last_id = rows[-1][0]

    # Covering index of the leaderboard's read (the stored values sit after the long texts);
    # built after the backfill, which is faster than maintaining it row by row.
    op.create_index('ix_prediction_metrics', 'prediction', list(_METRIC_INDEX), unique=False)


def downgrade() -> None:
    op.drop_index('ix_prediction_metrics', table_name='prediction')
    with op.batch_alter_table('prediction', schema=None) as batch_op:
        batch_op.drop_column('refused')
        batch_op.drop_column('distance_error_km')
