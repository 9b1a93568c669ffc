from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0005_study_researchers'),
    ]

    operations = [
        migrations.AddField(
            model_name='assignment',
            name='blind',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
